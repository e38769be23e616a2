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
        let signingInput = Self.base64URL(Array(header.utf8)) + "." + Self.base64URL(Array(claims.utf8))
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : ($0 == "/" ? "_" : $0) })
    }
}
