import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// One user with an iPhone (APNs), a browser (Web Push) and an open Android phone (UnifiedPush
/// with keys), all through the real gateway to the sandbox's two faces and a real relay: one
/// push on each for a typed push and for a relay-watch wrap, none for an archived conversation.
@Suite(.serialized) struct EveryPlatformEndToEndTests {
    @Test func oneUserOnThreePlatformsGetsOnePushOnEach() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await SandboxFixture.with { sandbox in
            let watch = RelayWatchTests.settings([relay])
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns, watch: watch,
                webPush: WebPushSettings(subject: WebPushDeliveryTests.subject, caFile: sandbox.caFile, allowPrivateEndpoints: true)
            ) { gateway in
                let alice = Keys.generate(), bob = Keys.generate()
                let phone = GatewayHarness.token(0x71)
                let browser = try WebPushDeliveryTests.subscribe(sandbox)
                let android = try WebPushDeliveryTests.subscribe(sandbox)
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
                }
                @Sendable func pushes() -> (phone: Int, browser: Int, android: Int) {
                    (
                        sandbox.delivered().filter { $0.deviceToken == phone }.count,
                        WebPushDeliveryTests.deliveries(sandbox, to: browser).filter { $0.status == 201 }.count,
                        WebPushDeliveryTests.deliveries(sandbox, to: android).filter { $0.status == 201 }.count
                    )
                }

                // A typed push: one on each device.
                try await register(watching: false)
                let post = ArchiveAndPushTests.pushBody(event: "ev-1", conversation: "C1", to: [bob])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: post).json?["candidate_devices"] == 3)
                #expect(try await GatewayHarness.eventually { pushes() == (1, 1, 1) }, "\(pushes())")
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
                #expect(try await GatewayHarness.eventually(within: 30) { pushes() == (2, 2, 2) }, "\(pushes())")
                let wrapPush = WebPushDeliveryTests.deliveries(sandbox, to: browser).last?.plaintext ?? ""
                #expect(try JSONValue(parsing: Array(wrapPush.utf8))["type"] == "gift_wrap")
                try await Task.sleep(for: .milliseconds(500))
                #expect(pushes() == (2, 2, 2), "once each")
            }
        }
    }
}
