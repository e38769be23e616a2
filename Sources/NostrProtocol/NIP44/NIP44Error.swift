/// NIP-44 failures, one case per check, in the order decryption performs them.
public enum NIP44Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// Empty payload, a `#` prefix, or a version byte other than 2.
    case unsupportedVersion
    case invalidPayloadLength
    case invalidBase64
    /// The secret key is zero or not below the curve order.
    case invalidSecretKey
    /// The peer key is not a point on the curve.
    case invalidPublicKey
    case invalidMAC
    case invalidPadding
    case invalidUTF8
    /// Plaintext empty or longer than the encrypt limit.
    case invalidPlaintextLength
    case invalidNonce

    public var description: String {
        switch self {
        case .unsupportedVersion: "unsupported encryption version"
        case .invalidPayloadLength: "invalid payload length"
        case .invalidBase64: "invalid base64"
        case .invalidSecretKey: "invalid secret key"
        case .invalidPublicKey: "invalid public key"
        case .invalidMAC: "invalid MAC"
        case .invalidPadding: "invalid padding"
        case .invalidUTF8: "plaintext is not valid UTF-8"
        case .invalidPlaintextLength: "plaintext must be 1 to 65535 bytes"
        case .invalidNonce: "nonce must be 32 bytes"
        }
    }
}
