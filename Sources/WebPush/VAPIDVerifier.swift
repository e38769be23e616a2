import Crypto
public import Foundation
import NostrProtocol

/// A push service's check of a sender's `Authorization: vapid …` header (RFC 8292 §3–4): the JWT
/// is ES256, signed by the key in `k`, addressed to this service's origin, and unexpired by at
/// most 24 hours. The Web Push sandbox answers 401/403 with the reason.
public enum VAPIDVerifier {
    /// The sender's public key (base64url) and the JWT's contact, when the header holds.
    public struct Identity: Sendable, Equatable {
        public let publicKey: String
        public let subject: String
    }

    public static func verify(authorization: String, audience: String, now: Date) throws(VAPIDError) -> Identity {
        let (token, key) = try parts(of: authorization)
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let headerBytes = Base64URL.decode(pieces[0]), let claimsBytes = Base64URL.decode(pieces[1]),
            let signatureBytes = Base64URL.decode(pieces[2]), let header = try? JSONValue(parsing: headerBytes),
            let claims = try? JSONValue(parsing: claimsBytes), header["alg"]?.stringValue == "ES256"
        else { throw .badToken }
        guard let point = Base64URL.decode(key), let publicKey = try? P256.Signing.PublicKey(x963Representation: point),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { throw .badHeader }
        guard publicKey.isValidSignature(signature, for: Array((pieces[0] + "." + pieces[1]).utf8)) else { throw .badSignature }
        guard claims["aud"]?.stringValue == audience else { throw .wrongAudience }
        guard case .integer(let expiry)? = claims["exp"] else { throw .badToken }
        let seconds = TimeInterval(expiry) - now.timeIntervalSince1970
        guard seconds > 0 else { throw .expired }
        guard seconds <= VAPIDKey.maxLifetime else { throw .expiresTooLate }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else { throw .missingSubject }
        return Identity(publicKey: key, subject: subject)
    }

    /// `vapid t=…,k=…`, the parameters in either order, with or without spaces after the comma.
    private static func parts(of authorization: String) throws(VAPIDError) -> (token: String, key: String) {
        let trimmed = authorization.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("vapid ") else { throw .badHeader }
        var token: String?, key: String?
        for parameter in trimmed.dropFirst(6).split(separator: ",") {
            let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw .badHeader }
            switch pair[0].lowercased() {
            case "t": token = String(pair[1])
            case "k": key = String(pair[1])
            default: continue
            }
        }
        guard let token, let key else { throw .badHeader }
        return (token, key)
    }
}
