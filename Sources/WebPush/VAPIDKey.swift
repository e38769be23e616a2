public import Crypto
public import Foundation
import NostrProtocol

/// The application server's identity to push services (RFC 8292): a P-256 signing key. Each
/// request carries `Authorization: vapid t=<JWT>,k=<public key>`, where the JWT (ES256) names
/// the push service's origin (`aud`), an expiry within 24 hours (`exp`) and a contact (`sub`).
/// Browsers are given the public key (`applicationServerKey`) when they subscribe.
public struct VAPIDKey: Sendable {
    public let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
    }

    /// A key from its 32-byte private scalar, base64url (the form `VAPID_PRIVATE_KEY` and most
    /// Web Push tools use), or PEM.
    public init(encoded text: String) throws(VAPIDError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN"), let key = try? P256.Signing.PrivateKey(pemRepresentation: trimmed) {
            self.init(privateKey: key)
        } else if let raw = Base64URL.decode(trimmed), raw.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) {
            self.init(privateKey: key)
        } else {
            throw .badPrivateKey
        }
    }

    /// The private scalar, base64url: what to store.
    public var encoded: String { Base64URL.encode(privateKey.rawRepresentation) }

    /// The public key as browsers take it: the 65-byte uncompressed point, base64url.
    public var publicKey: String { Base64URL.encode(privateKey.publicKey.x963Representation) }

    /// The longest validity RFC 8292 §2 allows.
    public static let maxLifetime: TimeInterval = 24 * 3600

    /// The `Authorization` header for a request to `endpoint`, valid until `expiresAt`.
    public func authorization(endpoint: String, subject: String, expiresAt: Date) throws(VAPIDError) -> String {
        guard let audience = Self.origin(of: endpoint) else { throw .badEndpoint }
        return try authorization(audience: audience, subject: subject, expiresAt: expiresAt)
    }

    /// The same for an origin already known (`scheme://host[:port]`, the JWT's `aud`).
    public func authorization(audience: String, subject: String, expiresAt: Date) throws(VAPIDError) -> String {
        let header = JSONValue.object(["typ": "JWT", "alg": "ES256"]).serialized
        let claims = JSONValue.object([
            "aud": .string(audience), "exp": .integer(Int64(expiresAt.timeIntervalSince1970)), "sub": .string(subject),
        ]).serialized
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        guard let signature = try? privateKey.signature(for: Array(signingInput.utf8)) else { throw .signingFailed }
        // No space after the comma: py_vapid and other push-service code split the header on its
        // last space.
        return "vapid t=\(signingInput).\(Base64URL.encode(signature.rawRepresentation)),k=\(publicKey)"
    }

    /// An endpoint's origin, the JWT's audience: `https://host`, with the port only when it is
    /// not the scheme's default. Nil when `endpoint` is not an absolute http(s) URL.
    public static func origin(of endpoint: String) -> String? {
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : $0 }
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}

public enum VAPIDError: Error, Equatable, CustomStringConvertible {
    case badPrivateKey
    case badEndpoint
    case signingFailed
    case badHeader
    case badToken
    case badSignature
    case wrongAudience
    case expired
    case expiresTooLate
    case missingSubject

    public var description: String {
        switch self {
        case .badPrivateKey: "a VAPID private key is a P-256 scalar: 32 bytes, base64url, or a PEM"
        case .badEndpoint: "the endpoint is not an absolute https URL"
        case .signingFailed: "the VAPID JWT could not be signed"
        case .badHeader: "expected Authorization: vapid t=<JWT>,k=<public key>"
        case .badToken: "the VAPID JWT is not a well-formed ES256 JWT"
        case .badSignature: "the VAPID JWT's signature does not verify with k"
        case .wrongAudience: "the VAPID JWT's aud is not this push service's origin"
        case .expired: "the VAPID JWT has expired"
        case .expiresTooLate: "the VAPID JWT's exp is more than 24 hours ahead"
        case .missingSubject: "the VAPID JWT has no sub (a mailto: or https: contact)"
        }
    }
}
