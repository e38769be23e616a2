import Crypto
import CryptoExtras
public import Foundation
import NostrProtocol

/// Signs the OAuth 2.0 JWT-bearer assertion (RFC 7523) a service account exchanges for an access
/// token: RS256 (RSASSA-PKCS1-v1_5 with SHA-256), as Google requires.
///
/// Header `{"alg":"RS256","typ":"JWT","kid":<private_key_id>}`; claims `iss` (the account's
/// email), `scope` (FCM's), `aud`, `iat` and `exp`, an hour apart (Google's longest). `aud` is
/// Google's token endpoint whatever URL the assertion is posted to, as google-auth (the library
/// under firebase-admin) signs it: Google checks that value, not the URL it was reached at.
public struct FCMAssertionSigner: Sendable {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    public static let lifetime: TimeInterval = 3600

    public static let audience = "https://oauth2.googleapis.com/token"

    let account: FCMServiceAccount
    private let key: _RSA.Signing.PrivateKey

    public init(account: FCMServiceAccount) throws(FCMServiceAccountError) {
        self.account = account
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKeyPEM)
        } catch {
            throw FCMServiceAccountError("private_key is not an RSA private key of 2048 bits or more in PEM")
        }
    }

    public func assertion(issuedAt: Date) throws -> String {
        var header: [String: JSONValue] = ["alg": "RS256", "typ": "JWT"]
        if let keyID = account.privateKeyID { header["kid"] = .string(keyID) }
        let iat = Int64(issuedAt.timeIntervalSince1970)
        let claims: JSONValue = [
            "iss": .string(account.clientEmail), "scope": .string(Self.scope), "aud": .string(Self.audience), "iat": .integer(iat),
            "exp": .integer(iat + Int64(Self.lifetime)),
        ]
        let signingInput =
            Base64URL.encode(Array(JSONValue.object(header).serialized.utf8)) + "." + Base64URL.encode(Array(claims.serialized.utf8))
        let signature = try key.signature(for: SHA256.hash(data: Array(signingInput.utf8)), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
