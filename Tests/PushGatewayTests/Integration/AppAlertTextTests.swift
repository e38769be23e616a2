import APNsSandbox
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// An app's own alert text reaches its users on every platform; the generic text stays for the
/// types it does not name.
@Suite(.serialized) struct AppAlertTextTests {
    @Test func anAppsOwnTextIsShownOnEveryPlatform() async throws {
        let alerts = AlertTextCatalog([GatewayHarness.topic: [.newMessage: AlertText(title: "Chat", body: "Someone wrote to you")]])
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns,
                webPush: WebPushSettings(subject: WebPushDeliveryTests.subject, caFile: sandbox.caFile, allowPrivateEndpoints: true),
                fcm: try sandbox.fcm, alerts: alerts
            ) { gateway in
                let bob = Keys.generate()
                let phone = GatewayHarness.token(0x73)
                let pixel = FCMDeliveryTests.token("text")
                let browser = try WebPushDeliveryTests.subscribe(sandbox)
                for body in [
                    GatewayHarness.registerBody(phone), FCMDeliveryTests.registerBody(pixel), WebPushDeliveryTests.registerBody(browser),
                ] {
                    #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: body).status == .accepted)
                }
                for (type, event) in [("new_message", "ev-own"), ("mention", "ev-generic")] {
                    let push = ArchiveAndPushTests.pushBody(type, event: event, to: [bob])
                    #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).json?["candidate_devices"] == 3)
                }
                @Sendable func titles() -> [String: [String]] {
                    [
                        "apns": sandbox.delivered().filter { $0.deviceToken == phone }.compactMap {
                            try? JSONValue(parsing: Array($0.payload.utf8))["aps"]?["alert"]?["title"]?.stringValue
                        },
                        "fcm": FCMDeliveryTests.deliveries(sandbox, to: pixel).compactMap {
                            $0.message?["notification"]?["title"]?.stringValue
                        },
                        "webpush": WebPushDeliveryTests.deliveries(sandbox, to: browser).compactMap {
                            try? JSONValue(parsing: Array(($0.plaintext ?? "").utf8))["title"]?.stringValue
                        },
                    ]
                }
                #expect(try await GatewayHarness.eventually { titles().values.allSatisfy { $0.count == 2 } }, "\(titles())")
                for (platform, seen) in titles() {
                    #expect(seen.sorted() == ["Chat", "You were mentioned"], "\(platform): \(seen)")
                }
            }
        }
    }

    /// An app listed without an APNs key takes Android and web devices, and refuses an iOS token
    /// with a clear 400 (it could never be pushed); nothing is stored for it.
    @Test func anAppWithoutAnAPNsKeyRefusesAnIOSToken() async throws {
        try await SandboxFixture.with { sandbox in
            var apns = sandbox.apns
            apns.keylessTopics = ["chat.web"]
            try await GatewayHarness.run(apns: apns, fcm: try sandbox.fcm) { gateway in
                let bob = Keys.generate()
                let ios = #"{"device_token":"\#(GatewayHarness.token(0x74))","apns_environment":"sandbox","topic":"chat.web"}"#
                let refused = try await gateway.send(bob, .post, "/v1/devices/register", json: ios)
                #expect(refused.status == .badRequest)
                #expect(refused.json?["error"] == "topic chat.web has no APNs key on this gateway", "\(refused.json ?? .null)")
                let android = #"{"platform":"fcm","device_token":"\#(FCMDeliveryTests.token("web"))","topic":"chat.web"}"#
                #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: android).status == .accepted)
                #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE platform = 'apns'") == 0)
                #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE topic = 'chat.web'") == 1)
            }
        }
    }
}
