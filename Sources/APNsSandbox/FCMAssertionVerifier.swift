import Crypto
import CryptoExtras
import Foundation
import NostrProtocol

/// Checks an OAuth 2.0 JWT-bearer assertion (RFC 7523) as Google's token endpoint does: RS256
/// signed by the service account's key, issued by its email, for Google's token endpoint (`aud`
/// is that URL wherever the assertion is posted), within the hour Google allows, asking for a
/// scope that covers FCM.
struct FCMAssertionVerifier: Sendable {
    let publicKey: _RSA.Signing.PublicKey
    let clientEmail: String
    /// Clock skew allowed on `iat` and `exp`.
    static let skew: TimeInterval = 300
    static let audience = "https://oauth2.googleapis.com/token"
    static let acceptedScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]

    /// Nil when valid, else the reason (Google's `error_description` style).
    func refusal(of assertion: String, now: Date) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])), let claimBytes = Base64URL.decode(String(parts[1])),
            let signatureBytes = Base64URL.decode(String(parts[2])),
            let header = try? JSONValue(parsing: headerBytes), let claims = try? JSONValue(parsing: claimBytes)
        else { return "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe" }
        guard header["alg"]?.stringValue == "RS256" else { return "Invalid JWT: alg must be RS256" }
        let signingInput = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard
            publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signatureBytes), for: SHA256.hash(data: signingInput),
                padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard claims["iss"]?.stringValue == clientEmail else { return "Invalid JWT: iss is not the service account" }
        guard claims["aud"]?.stringValue == Self.audience else { return "Invalid JWT: aud must be \(Self.audience)" }
        guard let iat = claims["iat"]?.integerValue, let exp = claims["exp"]?.integerValue else {
            return "Invalid JWT: iat and exp are required"
        }
        let seconds = now.timeIntervalSince1970
        // In Double: hostile claims (Int64.min, Int64.max) must not overflow a subtraction.
        guard Double(iat) <= seconds + Self.skew, Double(exp) > seconds - Self.skew, exp > iat, Double(exp) - Double(iat) <= 3600 else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        }
        let scopes = Set((claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: Self.acceptedScopes) else { return "Invalid JWT: no scope covers Firebase Cloud Messaging" }
        return nil
    }
}
