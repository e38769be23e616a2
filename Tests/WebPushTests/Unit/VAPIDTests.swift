import Crypto
import Foundation
import NostrProtocol
import Testing
import WebPush

/// RFC 8292: the header a sender writes and the checks a push service makes of it.
@Suite struct VAPIDTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let endpoint = "https://push.example.net:443/wpush/v2/gAAAA?x=1"

    @Test func theHeaderCarriesAnES256TokenForTheEndpointsOriginAndTheKey() throws {
        let key = VAPIDKey()
        let header = try key.authorization(endpoint: Self.endpoint, subject: "mailto:ops@example.org", expiresAt: Self.now + 12 * 3600)
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(",k=\(key.publicKey)"))
        let identity = try VAPIDVerifier.verify(authorization: header, audience: "https://push.example.net", now: Self.now)
        #expect(identity.publicKey == key.publicKey && identity.subject == "mailto:ops@example.org")
        // The spaced form RFC 8292 prints is read too.
        let spaced = header.replacingOccurrences(of: ",k=", with: ", k=")
        #expect(try VAPIDVerifier.verify(authorization: spaced, audience: "https://push.example.net", now: Self.now) == identity)
        #expect(Base64URL.decode(key.publicKey)?.count == 65)
    }

    @Test func theAudienceIsTheOriginWithANonDefaultPortOnly() {
        #expect(VAPIDKey.origin(of: "https://fcm.googleapis.com/fcm/send/abc") == "https://fcm.googleapis.com")
        #expect(VAPIDKey.origin(of: "https://Push.Example.NET:443/x") == "https://push.example.net")
        #expect(VAPIDKey.origin(of: "https://127.0.0.1:8443/push/1") == "https://127.0.0.1:8443")
        #expect(VAPIDKey.origin(of: "/relative/path") == nil)
        #expect(VAPIDKey.origin(of: "ftp://push.example.net/x") == nil)
    }

    @Test func aPushServiceRefusesWhatRFC8292Forbids() throws {
        let key = VAPIDKey()
        let audience = "https://push.example.net"
        func header(_ endpoint: String = Self.endpoint, expires: TimeInterval = 3600, subject: String = "mailto:a@b.c") throws -> String {
            try key.authorization(endpoint: endpoint, subject: subject, expiresAt: Self.now + expires)
        }
        #expect(throws: VAPIDError.wrongAudience) {
            try VAPIDVerifier.verify(authorization: header("https://other.example/x"), audience: audience, now: Self.now)
        }
        #expect(throws: VAPIDError.expired) {
            try VAPIDVerifier.verify(authorization: header(expires: -1), audience: audience, now: Self.now)
        }
        #expect(throws: VAPIDError.expiresTooLate) {
            try VAPIDVerifier.verify(authorization: header(expires: 24 * 3600 + 60), audience: audience, now: Self.now)
        }
        #expect(throws: VAPIDError.missingSubject) {
            try VAPIDVerifier.verify(authorization: header(subject: ""), audience: audience, now: Self.now)
        }
        // Another key's k: the signature does not verify with it.
        let forged = try header().replacingOccurrences(of: key.publicKey, with: VAPIDKey().publicKey)
        #expect(throws: VAPIDError.badSignature) { try VAPIDVerifier.verify(authorization: forged, audience: audience, now: Self.now) }
        #expect(throws: VAPIDError.badHeader) { try VAPIDVerifier.verify(authorization: "Bearer abc", audience: audience, now: Self.now) }
        #expect(throws: VAPIDError.badHeader) {
            try VAPIDVerifier.verify(authorization: "vapid t=a.b.c", audience: audience, now: Self.now)
        }
        #expect(throws: VAPIDError.badToken) {
            try VAPIDVerifier.verify(authorization: "vapid t=a.b,k=\(key.publicKey)", audience: audience, now: Self.now)
        }
        #expect(throws: VAPIDError.badEndpoint) {
            try key.authorization(endpoint: "push.example", subject: "mailto:a@b.c", expiresAt: Self.now)
        }
    }

    @Test func aKeyIsStoredAsItsScalarAndReadBackFromThatOrPEM() throws {
        let key = VAPIDKey()
        #expect(try VAPIDKey(encoded: key.encoded).publicKey == key.publicKey)
        #expect(try VAPIDKey(encoded: key.privateKey.pemRepresentation).publicKey == key.publicKey)
        #expect(throws: VAPIDError.badPrivateKey) { try VAPIDKey(encoded: "not a key") }
        #expect(throws: VAPIDError.badPrivateKey) { try VAPIDKey(encoded: Base64URL.encode([UInt8](repeating: 0, count: 32))) }
    }
}
