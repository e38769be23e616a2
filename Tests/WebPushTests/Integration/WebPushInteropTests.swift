import Crypto
import Foundation
import NostrProtocol
import TestSupport
import Testing
import WebPush

/// Our Web Push code against the reference stack on PyPI (scripts/interop/webpush_peer.py):
/// http_ece reads what we encrypt, as a browser would; we read what pywebpush encrypts; py_vapid
/// accepts our VAPID header.
@Suite(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
struct WebPushInteropTests {
    static func peer(_ request: JSONValue) async throws -> JSONValue {
        try await RustNostrPeer.script("webpush_peer.py", [request.serialized])
    }

    @Test func httpECEDecryptsWhatWeEncrypt() async throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try WebPushSubscriptionKeys(point: Array(receiver.publicKey.x963Representation), authSecret: (0..<16).map { UInt8($0) })
        for (message, padding) in [
            (#"{"type":"incoming_call","event_id":"e1"}"#, 0), ("x", 200), (String(repeating: "é", count: 1_000), 3),
        ] {
            let body = try WebPushEncryption.encrypt(Array(message.utf8), for: keys, padding: padding)
            let answer = try await Self.peer(
                .object([
                    "op": "decrypt", "body": .string(Base64URL.encode(body)),
                    "receiver_private": .string(Base64URL.encode(receiver.rawRepresentation)), "auth": .string(keys.auth),
                ]))
            #expect(answer["plaintext"]?.stringValue.flatMap { Base64URL.decode($0) } == Array(message.utf8))
        }
    }

    @Test func weDecryptWhatPywebpushEncrypts() async throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try WebPushSubscriptionKeys(
            point: Array(receiver.publicKey.x963Representation), authSecret: Array(repeating: 0xA5, count: 16))
        let message = Array(#"{"type":"new_message","conversation_id":"c9"}"#.utf8)
        let answer = try await Self.peer(
            .object([
                "op": "encrypt", "plaintext": .string(Base64URL.encode(message)), "p256dh": .string(keys.p256dh),
                "auth": .string(keys.auth),
            ]))
        let body = try #require(answer["body"]?.stringValue.flatMap { Base64URL.decode($0) })
        #expect(try WebPushDecryption.decrypt(body, receiverKey: receiver, authSecret: keys.authSecret) == message)
        // The wrong secret still fails: the check above is not vacuous.
        #expect(throws: WebPushDecryptionError.authenticationFailed) {
            try WebPushDecryption.decrypt(body, receiverKey: receiver, authSecret: Array(repeating: 0, count: 16))
        }
    }

    @Test func pyVapidAcceptsOurHeaderAndItsClaims() async throws {
        let key = VAPIDKey()
        let expiry = Date().addingTimeInterval(12 * 3600)
        let header = try key.authorization(
            endpoint: "https://updates.push.example.com/wpush/v2/abc", subject: "mailto:ops@example.org", expiresAt: expiry)
        let answer = try await Self.peer(.object(["op": "verify_vapid", "authorization": .string(header)]))
        #expect(answer["valid"] == .bool(true))
        #expect(answer["claims"]?["aud"]?.stringValue == "https://updates.push.example.com")
        #expect(answer["claims"]?["sub"]?.stringValue == "mailto:ops@example.org")
        #expect(answer["claims"]?["exp"] == .integer(Int64(expiry.timeIntervalSince1970)))
        // Signed by another key than the one in k: py_vapid says so.
        let forged = header.replacingOccurrences(of: key.publicKey, with: VAPIDKey().publicKey)
        let refused = try await Self.peer(.object(["op": "verify_vapid", "authorization": .string(forged)]))
        #expect(refused["valid"] == .bool(false))
    }
}
