import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// firebase-admin, Google's own FCM server library, against the sandbox's FCM face
/// (scripts/interop/fcm_peer.py): its google-auth assertion is exchanged at the face's token
/// endpoint, its `messages:send` is accepted, and the face's error answers become the same
/// firebase-admin exceptions Google's would. Then the gateway's request is compared with the
/// one firebase-admin sends for the same message.
@Suite(.serialized, .enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
struct FCMInteropTests {
    static func peer(_ sandbox: SandboxFixture, _ fields: [String: JSONValue]) async throws -> JSONValue {
        let account = try sandbox.writeServiceAccount()
        defer { try? FileManager.default.removeItem(atPath: account) }
        var request = fields
        request["service_account"] = .string(account)
        request["api_url"] = .string(sandbox.url + "/fcm")
        request["ca_file"] = .string(sandbox.caFile)
        return try await RustNostrPeer.script("fcm_peer.py", [JSONValue.object(request).serialized])
    }

    @Test func firebaseAdminSendsThroughTheSandboxFace() async throws {
        try await SandboxFixture.with { sandbox in
            let token = FCMDeliveryTests.token("admin")
            let message: JSONValue = [
                "token": .string(token), "data": ["type": "new_message", "event_id": "e1"],
                "notification": ["title": "New message", "body": "Open the app"],
                "android": ["priority": "high", "ttl_seconds": 120, "collapse_key": "c1"],
            ]
            let answer = try await Self.peer(sandbox, ["op": "send", "message": message])
            #expect(answer["name"]?.stringValue?.hasPrefix("projects/linkstr-sandbox/messages/") == true, "\(answer)")
            #expect(sandbox.state.fcm.exchanges == 1, "google-auth's RS256 assertion was exchanged at the face")
            let delivery = try #require(FCMDeliveryTests.deliveries(sandbox, to: token).first)
            #expect(delivery.status == 200)
            #expect(delivery.headers["x-firebase-client"]?.hasPrefix("fire-admin-python/") == true)
            #expect(delivery.message?["android"]?["ttl"] == "120s")
        }
    }

    @Test func firebaseAdminReadsTheFaceErrorsAsItReadsGoogles() async throws {
        try await SandboxFixture.with { sandbox in
            let expected = [
                "unregistered": "UnregisteredError", "invalid": "InvalidArgumentError", "mismatch": "SenderIdMismatchError",
                "thirdparty": "ThirdPartyAuthError", "quota9": "QuotaExceededError", "unavailable9": "UnavailableError",
                "internal9": "InternalError", "fine": "ok",
            ]
            let tokens = expected.keys.map { FCMDeliveryTests.token($0) }
            let answer = try await Self.peer(sandbox, ["op": "errors", "tokens": .array(tokens.map { .string($0) })])
            for (prefix, error) in expected {
                #expect(answer["results"]?[FCMDeliveryTests.token(prefix)]?.stringValue == error, "\(prefix): \(answer)")
            }
        }
    }

    /// The gateway's `messages:send` for a typed push, and firebase-admin's for the same fields:
    /// the same JSON but for the token, and the same format-version and content-type headers.
    @Test func theGatewaySendsWhatFirebaseAdminSends() async throws {
        try await FCMDeliveryTests.withGateway { (gateway: GatewayHarness, sandbox: SandboxFixture) async throws in
            // An alert, a call (a data message that lives 30 s) and a background push (normal
            // priority, no notification): each as the gateway sends it, then as firebase-admin
            // sends the same fields.
            let kinds: [(name: String, push: (Keys) -> String)] = [
                ("alert", { ArchiveAndPushTests.pushBody(event: "ev-shape", conversation: "conv-shape", to: [$0]) }),
                ("call", { ArchiveAndPushTests.pushBody("incoming_call", event: "call-shape", conversation: "room", to: [$0]) }),
                (
                    "background",
                    { ArchiveAndPushTests.pushBody("new_message", event: "sync-shape", to: [$0], extra: #","push_type":"background""#) }
                ),
            ]
            for (index, kind) in kinds.enumerated() {
                let bob = Keys.generate()
                let ours = FCMDeliveryTests.token("ours", index)
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: FCMDeliveryTests.registerBody(ours)).status
                        == .accepted)
                #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: kind.push(bob)).status == .accepted)
                #expect(try await GatewayHarness.eventually { !FCMDeliveryTests.deliveries(sandbox, to: ours).isEmpty }, "\(kind.name)")
                let gatewayDelivery = try #require(FCMDeliveryTests.deliveries(sandbox, to: ours).first)
                let sent = try #require(gatewayDelivery.message)
                let android = try #require(sent["android"])
                let ttl = try #require(Int64(android["ttl"]?.stringValue?.dropLast() ?? ""))

                let theirs = FCMDeliveryTests.token("theirs", index)
                var config: [String: JSONValue] = ["priority": android["priority"] ?? .null, "ttl_seconds": .integer(ttl)]
                if let collapse = android["collapse_key"] { config["collapse_key"] = collapse }
                if let tag = android["notification"]?["tag"] { config["tag"] = tag }
                var same: [String: JSONValue] = ["token": .string(theirs), "data": sent["data"] ?? .null, "android": .object(config)]
                if let notification = sent["notification"] { same["notification"] = notification }
                _ = try await FCMInteropTests.peer(sandbox, ["op": "send", "message": .object(same)])
                let adminDelivery = try #require(FCMDeliveryTests.deliveries(sandbox, to: theirs).first)
                var adminMessage = try #require(adminDelivery.message?.objectValue)
                adminMessage["token"] = .string(ours)
                #expect(JSONValue.object(adminMessage) == sent, "\(kind.name): firebase-admin: \(adminMessage)\ngateway: \(sent)")
                for header in ["x-goog-api-format-version", "content-type"] {
                    #expect(gatewayDelivery.headers[header] == adminDelivery.headers[header], "\(kind.name): \(header)")
                }
            }
        }
    }
}
