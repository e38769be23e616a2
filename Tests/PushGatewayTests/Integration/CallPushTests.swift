import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import Testing

/// `incoming_call` and the other types for apps beyond linkstr, through the real gateway to the
/// sandbox: a call rings a PushKit token as a VoIP push (an alert token only when the user has
/// none) and a browser with high urgency; a PushKit token gets nothing but calls.
@Suite(.serialized) struct CallPushTests {
    @Test func aCallRingsTheVoIPTokenAndTheBrowserAndFallsBackToAnAlert() async throws {
        try await WebPushDeliveryTests.withGateway { gateway, sandbox in
            let caller = Keys.generate(), bob = Keys.generate(), carol = Keys.generate()
            let bobAlert = GatewayHarness.token(0x81), bobVoIP = GatewayHarness.token(0x82), carolAlert = GatewayHarness.token(0x83)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(bobAlert)).status == .accepted)
            let voip = GatewayHarness.registerBody(bobVoIP, extra: #","push_type":"voip""#)
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: voip).status == .accepted)
            let browser = try WebPushDeliveryTests.subscribe(sandbox)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: WebPushDeliveryTests.registerBody(browser)).status
                    == .accepted)
            #expect(
                try await gateway.send(carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(carolAlert)).status
                    == .accepted)

            // Bob: his VoIP token and his browser, not his alert token. Carol has no VoIP token:
            // her alert token.
            let call = ArchiveAndPushTests.pushBody("incoming_call", event: "call-1", conversation: "room-1", to: [bob, carol])
            #expect(try await gateway.send(caller, .post, "/v1/push", json: call).json?["candidate_devices"] == 3)
            #expect(
                try await GatewayHarness.eventually {
                    sandbox.delivered().count == 2 && !WebPushDeliveryTests.deliveries(sandbox, to: browser).isEmpty
                })
            let byToken = Dictionary(sandbox.delivered().map { ($0.deviceToken, $0) }) { first, _ in first }
            let rung = try #require(byToken[bobVoIP])
            #expect(rung.topic == GatewayHarness.topic + ".voip")
            #expect(rung.pushType == "voip" && rung.priority == "10" && rung.collapseID == nil)
            let expiration = Int64(rung.expiration ?? "") ?? 0
            #expect(expiration > 0 && expiration <= Int64(Date().timeIntervalSince1970) + 31, "a call is never delivered late")
            #expect(
                try JSONValue(parsing: Array(rung.payload.utf8)) == [
                    "type": "incoming_call", "event_id": "call-1", "conversation_id": "room-1",
                ])
            #expect(byToken[bobAlert] == nil, "bob's alert token stays quiet: his VoIP token rang")
            let fallback = try #require(byToken[carolAlert])
            #expect(fallback.pushType == "alert" && fallback.topic == GatewayHarness.topic)
            #expect(try JSONValue(parsing: Array(fallback.payload.utf8))["aps"]?["alert"]?["title"] == "Incoming call")
            let web = try #require(WebPushDeliveryTests.deliveries(sandbox, to: browser).first)
            #expect(web.urgency == "high" && (Int(web.ttl ?? "") ?? 99) <= 60)
            #expect(try JSONValue(parsing: Array((web.plaintext ?? "").utf8))["type"] == "incoming_call")

            // Anything but a call leaves the VoIP token alone.
            for type in ["new_message", "mention", "missed_call", "group_invite"] {
                let push = ArchiveAndPushTests.pushBody(type, event: "ev-\(type)", to: [bob])
                #expect(try await gateway.send(caller, .post, "/v1/push", json: push).json?["candidate_devices"] == 2, "\(type)")
            }
            #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 6 })
            let titles = sandbox.delivered().filter { $0.deviceToken == bobAlert }.compactMap {
                (try? JSONValue(parsing: Array($0.payload.utf8)))?["aps"]?["alert"]?["title"]?.stringValue
            }
            #expect(Set(titles) == ["New message", "You were mentioned", "Missed call", "New group invite"])
            #expect(sandbox.delivered().filter { $0.deviceToken == bobVoIP }.count == 1)
        }
    }

    /// `"push_type": "background"`: APNs content-available at priority 5 with no alert, Web Push at
    /// low urgency with no text.
    @Test func aBackgroundPushWakesTheAppWithoutAnAlert() async throws {
        try await WebPushDeliveryTests.withGateway { gateway, sandbox in
            let bob = Keys.generate()
            let phone = GatewayHarness.token(0x91)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(phone)).status == .accepted)
            let browser = try WebPushDeliveryTests.subscribe(sandbox)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: WebPushDeliveryTests.registerBody(browser)).status
                    == .accepted)
            let push = ArchiveAndPushTests.pushBody("new_message", event: "sync-1", to: [bob], extra: #","push_type":"background""#)
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).json?["candidate_devices"] == 2)
            #expect(
                try await GatewayHarness.eventually {
                    sandbox.delivered().count == 1 && !WebPushDeliveryTests.deliveries(sandbox, to: browser).isEmpty
                })
            let woken = try #require(sandbox.delivered().first)
            #expect(woken.pushType == "background" && woken.priority == "5")
            let payload = try JSONValue(parsing: Array(woken.payload.utf8))
            #expect(payload["aps"] == ["content-available": 1])
            #expect(payload["event_id"] == "sync-1")
            let web = try #require(WebPushDeliveryTests.deliveries(sandbox, to: browser).first)
            #expect(web.urgency == "low")
            let message = try JSONValue(parsing: Array((web.plaintext ?? "").utf8))
            #expect(message["background"] == true && message["title"] == nil && message["event_id"] == "sync-1")
        }
    }
}
