public import Crypto
import NostrProtocol

/// A browser's (or UnifiedPush distributor's) message keys, as `PushSubscription.toJSON().keys`
/// gives them: `p256dh`, its P-256 public key as a 65-byte uncompressed point, and `auth`, a
/// 16-byte secret, both base64url without padding (RFC 8291 §2).
public struct WebPushSubscriptionKeys: Sendable, Equatable {
    public let receiverKey: P256.KeyAgreement.PublicKey
    /// `receiverKey` as the 65 octets it was given in: every message's key derivation reads them,
    /// and BoringSSL would write them out again (a field inversion) each time it is asked.
    public let receiverPoint: [UInt8]
    public let authSecret: [UInt8]

    public static let pointLength = 65
    public static let authSecretLength = 16

    /// Parses and checks the two keys; each fault has its own error, naming the field.
    public init(p256dh: String, auth: String) throws(WebPushKeyError) {
        guard let point = Base64URL.decode(p256dh) else { throw .notBase64URL(field: "p256dh") }
        guard let secret = Base64URL.decode(auth) else { throw .notBase64URL(field: "auth") }
        try self.init(point: point, authSecret: secret)
    }

    public init(point: [UInt8], authSecret: [UInt8]) throws(WebPushKeyError) {
        guard point.count == Self.pointLength, point.first == 0x04 else {
            throw .wrongLength(field: "p256dh", expected: Self.pointLength, got: point.count)
        }
        guard authSecret.count == Self.authSecretLength else {
            throw .wrongLength(field: "auth", expected: Self.authSecretLength, got: authSecret.count)
        }
        guard let key = try? P256.KeyAgreement.PublicKey(x963Representation: point) else { throw .notOnCurve }
        self.receiverKey = key
        self.receiverPoint = point
        self.authSecret = authSecret
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.receiverPoint == rhs.receiverPoint && lhs.authSecret == rhs.authSecret
    }

    /// The keys as a subscription carries them.
    public var p256dh: String { Base64URL.encode(receiverPoint) }
    public var auth: String { Base64URL.encode(authSecret) }
}

/// Why a subscription's keys were refused.
public enum WebPushKeyError: Error, Equatable, CustomStringConvertible {
    case notBase64URL(field: String)
    case wrongLength(field: String, expected: Int, got: Int)
    case notOnCurve

    public var description: String {
        switch self {
        case .notBase64URL(let field): "keys.\(field) must be base64url without padding"
        case .wrongLength("p256dh", _, let got): "keys.p256dh must be a 65-byte uncompressed P-256 point (04…), got \(got) bytes"
        case .wrongLength(let field, let expected, let got): "keys.\(field) must be \(expected) bytes, got \(got)"
        case .notOnCurve: "keys.p256dh is not a point on P-256"
        }
    }
}
