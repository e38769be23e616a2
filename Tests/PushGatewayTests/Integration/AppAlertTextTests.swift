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
}
