import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// One user with an iPhone (APNs), an Android phone (FCM), a browser (Web Push) and an open
/// Android phone (UnifiedPush with keys), all through the real gateway to the sandbox's three
/// faces and a real relay: one push on each for a typed push and for a relay-watch wrap, none for
/// an archived conversation.
@Suite(.serialized) struct EveryPlatformEndToEndTests {
    @Test func oneUserOnEveryPlatformGetsOnePushOnEach() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await SandboxFixture.with { sandbox in
            let watch = RelayWatchTests.settings([relay])
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns, watch: watch,
                webPush: WebPushSettings(subject: WebPushDeliveryTests.subject, caFile: sandbox.caFile, allowPrivateEndpoints: true),
                fcm: try sandbox.fcm
            ) { gateway in
                let alice = Keys.generate(), bob = Keys.generate()
                let phone = GatewayHarness.token(0x71)
                let browser = try WebPushDeliveryTests.subscribe(sandbox)
                let android = try WebPushDeliveryTests.subscribe(sandbox)
                let pixel = FCMDeliveryTests.token("pixel")
                let pixelBody: @Sendable (Bool) -> String = { watching in
                    JSONValue.object(["platform": "fcm", "device_token": .string(pixel), "relay_watch": .bool(watching)]).serialized
                }
                let androidBody: @Sendable (Bool) -> String = { watching in
                    JSONValue.object([
                        "platform": "unifiedpush", "endpoint": android["endpoint"] ?? .null, "keys": android["keys"] ?? .null,
                        "relay_watch": .bool(watching),
                    ]).serialized
                }
                let browserBody: @Sendable (Bool) -> String = { watching in
                    JSONValue.object(["platform": "webpush", "subscription": browser, "relay_watch": .bool(watching)]).serialized
                }
                @Sendable func register(watching: Bool) async throws {
                    try await RelayWatchTests.registerWatching(gateway, bob, phone, watch: watching)
                    #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: browserBody(watching)).status == .accepted)
                    #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: androidBody(watching)).status == .accepted)
                    #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: pixelBody(watching)).status == .accepted)
                }
                @Sendable func pushes() -> (phone: Int, pixel: Int, browser: Int, android: Int) {
                    (
                        sandbox.delivered().filter { $0.deviceToken == phone }.count,
                        FCMDeliveryTests.deliveries(sandbox, to: pixel).filter { $0.status == 200 }.count,
                        WebPushDeliveryTests.deliveries(sandbox, to: browser).filter { $0.status == 201 }.count,
                        WebPushDeliveryTests.deliveries(sandbox, to: android).filter { $0.status == 201 }.count
                    )
                }

                // A typed push: one on each device.
                try await register(watching: false)
                let post = ArchiveAndPushTests.pushBody(event: "ev-1", conversation: "C1", to: [bob])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: post).json?["candidate_devices"] == 4)
                #expect(try await GatewayHarness.eventually { pushes() == (1, 1, 1, 1) }, "\(pushes())")
                #expect(FCMDeliveryTests.deliveries(sandbox, to: pixel).first?.message?["data"]?["event_id"] == "ev-1")
                let plaintext = WebPushDeliveryTests.deliveries(sandbox, to: android).first?.plaintext ?? ""
                #expect(try JSONValue(parsing: Array(plaintext.utf8))["event_id"] == "ev-1", "decrypted with the distributor's keys")

                // Archived: nothing on any device.
                let archive = #"{"archived_conversation_ids":["C1"]}"#
                #expect(try await gateway.send(bob, .put, "/v1/conversations/archive-state", json: archive).status == .accepted)
                let again = ArchiveAndPushTests.pushBody(event: "ev-2", conversation: "C1", to: [bob])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: again).json?["candidate_devices"] == 0)

                // A gift wrap on the relay: the watcher pushes each device once.
                try await register(watching: true)
                #expect(try await RelayWatchTests.waitLive(gateway, pubkeys: 1, within: 30))
                try await RelayWatchTests.publish([try RelayWatchTests.wrap(to: bob, from: alice)], to: relay)
                #expect(try await GatewayHarness.eventually(within: 30) { pushes() == (2, 2, 2, 2) }, "\(pushes())")
                let wrapPush = WebPushDeliveryTests.deliveries(sandbox, to: browser).last?.plaintext ?? ""
                #expect(try JSONValue(parsing: Array(wrapPush.utf8))["type"] == "gift_wrap")
                #expect(FCMDeliveryTests.deliveries(sandbox, to: pixel).last?.message?["data"]?["type"] == "gift_wrap")
                try await Task.sleep(for: .milliseconds(500))
                #expect(pushes() == (2, 2, 2, 2), "once each")

                // Deleting the account takes every device, whatever its platform.
                let deleted = try await gateway.send(bob, .delete, "/v1/account")
                #expect(deleted.status == .ok && deleted.json?["devices_removed"] == 4, "\(deleted.json ?? .null)")
                #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
                let after = ArchiveAndPushTests.pushBody(event: "ev-3", conversation: "C2", to: [bob])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: after).json?["candidate_devices"] == 0)
            }
        }
    }

    /// The per-device budget and the dedupe, for one user whose devices are on four platforms:
    /// each device spends its own budget whatever its platform, and an event already pushed is
    /// pushed to none of them again.
    @Test func theBudgetAndDedupeHoldForEachDeviceOnEveryPlatform() async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns, deviceBudget: PushBudget(alerts: 2, perSeconds: 3600),
                webPush: WebPushSettings(subject: WebPushDeliveryTests.subject, caFile: sandbox.caFile, allowPrivateEndpoints: true),
                fcm: try sandbox.fcm
            ) { gateway in
                let bob = Keys.generate()
                let phone = GatewayHarness.token(0x72)
                let pixel = FCMDeliveryTests.token("budget")
                let browser = try WebPushDeliveryTests.subscribe(sandbox)
                let distributor = try WebPushDeliveryTests.subscribe(sandbox, ["plain": "1"])
                @Sendable func push(_ event: String) async throws -> JSONValue? {
                    let body = ArchiveAndPushTests.pushBody(event: event, conversation: "C-\(event)", to: [bob])
                    return try await gateway.send(Keys.generate(), .post, "/v1/push", json: body).json?["candidate_devices"]
                }
                @Sendable func webEvents(_ subscription: JSONValue) -> [String] {
                    WebPushDeliveryTests.deliveries(sandbox, to: subscription).filter { $0.status == 201 }.compactMap {
                        try? JSONValue(parsing: Array(($0.plaintext ?? "").utf8))["event_id"]?.stringValue
                    }
                }
                @Sendable func events() -> (phone: [String], pixel: [String], browser: [String], distributor: [String]) {
                    (
                        sandbox.delivered().filter { $0.deviceToken == phone }.compactMap {
                            try? JSONValue(parsing: Array($0.payload.utf8))["event_id"]?.stringValue
                        },
                        FCMDeliveryTests.deliveries(sandbox, to: pixel).filter { $0.status == 200 }.compactMap {
                            $0.message?["data"]?["event_id"]?.stringValue
                        },
                        webEvents(browser), webEvents(distributor)
                    )
                }

                // The Android phone alone first: it spends one of its two.
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: FCMDeliveryTests.registerBody(pixel)).status
                        == .accepted)
                #expect(try await push("ev-0") == 1)
                #expect(try await GatewayHarness.eventually { events().pixel == ["ev-0"] })
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(phone)).status == .accepted
                )
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: WebPushDeliveryTests.registerBody(browser)).status
                        == .accepted)
                let openAndroid = JSONValue.object(["platform": "unifiedpush", "endpoint": distributor["endpoint"] ?? .null]).serialized
                #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: openAndroid).status == .accepted)

                #expect(try await push("ev-1") == 4)
                #expect(try await push("ev-1") == 0, "deduped on every platform")
                #expect(try await push("ev-2") == 3, "the Android phone's budget is spent; the others' are not")
                #expect(try await push("ev-3") == 0, "every budget spent")
                #expect(
                    try await GatewayHarness.eventually {
                        let seen = events()
                        return seen.phone.count == 2 && seen.pixel.count == 2 && seen.browser.count == 2 && seen.distributor.count == 2
                    }, "\(events())")
                try await Task.sleep(for: .milliseconds(300))
                let seen = events()
                #expect(seen.phone.sorted() == ["ev-1", "ev-2"] && seen.browser.sorted() == ["ev-1", "ev-2"], "\(seen)")
                #expect(seen.distributor.sorted() == ["ev-1", "ev-2"], "\(seen)")
                #expect(seen.pixel.sorted() == ["ev-0", "ev-1"], "\(seen)")
            }
        }
    }
}
