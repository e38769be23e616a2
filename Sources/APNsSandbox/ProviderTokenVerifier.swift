public import Crypto
import Foundation
import NostrProtocol

/// A team's signing key as the sandbox knows it: what Apple holds for a `.p8` key.
public struct ProviderKey: Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKey: P256.Signing.PublicKey

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
    }

    /// From a PEM that holds either the `.p8` private key or its public key.
    public init(keyID: String, teamID: String, pem: String) throws {
        let publicKey: P256.Signing.PublicKey
        if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            publicKey = privateKey.publicKey
        } else {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
        }
        self.init(keyID: keyID, teamID: teamID, publicKey: publicKey)
    }
}

/// Checks APNs provider tokens the way Apple does: an ES256 JWS whose header names a known `kid`,
/// whose `iss` is that key's team, whose integer `iat` is neither in the future nor over an hour
/// old, signed with the raw r‖s signature. Verified tokens are cached (signature checks dominate
/// the sandbox's CPU otherwise); age is re-checked on every use.
public final class ProviderTokenVerifier: Sendable {
    public enum Verdict: Sendable, Equatable {
        case valid(issuedAt: Int64)
        /// Apple's 403 reason.
        case rejected(String)
    }

    public static let maximumAge: Int64 = 3600
    /// Clock skew tolerated for an `iat` slightly in the future.
    public static let futureSkew: Int64 = 60

    private let keys: [String: ProviderKey]
    private let verified = Locked<[String: Int64]>([:])
    /// The last header verified: a provider shares one token across every request, so one string
    /// comparison usually answers, without copying and hashing the ~250-byte token per request.
    private let lastVerified = Locked<(authorization: String, issuedAt: Int64)?>(nil)

    public init(keys: [ProviderKey]) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `authorization` header value, at `now` (unix seconds).
    public func verify(authorization: String?, now: Int64) -> Verdict {
        guard let authorization, !authorization.isEmpty else { return .rejected("MissingProviderToken") }
        guard authorization.hasPrefix("bearer ") else { return .rejected("InvalidProviderToken") }
        if let last = lastVerified.withLock({ $0 }), last.authorization == authorization {
            return Self.ageVerdict(issuedAt: last.issuedAt, now: now)
        }
        let token = String(authorization.dropFirst("bearer ".count))
        let issuedAt: Int64
        if let cached = verified.withLock({ $0[token] }) {
            issuedAt = cached
        } else {
            switch checkSignature(token) {
            case .valid(let iat): issuedAt = iat
            case .rejected(let reason): return .rejected(reason)
            }
            verified.withLock { cache in
                if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }
                cache[token] = issuedAt
            }
        }
        lastVerified.withLock { $0 = (authorization, issuedAt) }
        return Self.ageVerdict(issuedAt: issuedAt, now: now)
    }

    private static func ageVerdict(issuedAt: Int64, now: Int64) -> Verdict {
        if issuedAt > now + futureSkew { return .rejected("InvalidProviderToken") }
        if now - issuedAt > maximumAge { return .rejected("ExpiredProviderToken") }
        return .valid(issuedAt: issuedAt)
    }

    private func checkSignature(_ token: String) -> Verdict {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]), let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONValue(parsing: String(decoding: headerBytes, as: UTF8.self)),
            let claims = try? JSONValue(parsing: String(decoding: claimsBytes, as: UTF8.self))
        else { return .rejected("InvalidProviderToken") }
        guard header["alg"]?.stringValue == "ES256", let keyID = header["kid"]?.stringValue, let key = keys[keyID],
            claims["iss"]?.stringValue == key.teamID, case .integer(let issuedAt)? = claims["iat"]
        else { return .rejected("InvalidProviderToken") }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        else { return .rejected("InvalidProviderToken") }
        return .valid(issuedAt: issuedAt)
    }
}
