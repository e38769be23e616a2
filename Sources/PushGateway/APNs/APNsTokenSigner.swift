import Crypto
public import Foundation
import NostrProtocol

/// Signs APNs provider tokens: a JWS with header `{"alg":"ES256","kid":<key id>}` and claims
/// `{"iss":<team id>,"iat":<unix seconds>}` (an integer, unlike some libraries that send a
/// string), signed with the raw 64-byte r‖s ES256 signature, base64url without padding.
public struct APNsTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    private let key: P256.Signing.PrivateKey

    public init(app: APNsApp) throws {
        keyID = app.keyID
        teamID = app.teamID
        key = try P256.Signing.PrivateKey(pemRepresentation: app.privateKeyPEM)
    }

    public func token(issuedAt: Date) throws -> String {
        let header = JSONValue.object(["alg": "ES256", "kid": .string(keyID)]).serialized
        let claims = JSONValue.object(["iss": .string(teamID), "iat": .integer(Int64(issuedAt.timeIntervalSince1970))]).serialized
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
