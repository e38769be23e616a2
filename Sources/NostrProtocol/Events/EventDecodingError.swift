/// Why JSON is not a well-formed Nostr event. Says which field, never echoes secrets.
public enum EventDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    case json(JSONError)
    case notAnObject
    case missingField(String)
    case wrongType(field: String, expected: String)
    case malformedHex(field: String)
    case invalidPublicKey
    case kindOutOfRange
    case negativeTimestamp
    case emptyTag(index: Int)
    /// A rumor (unsigned event) carried a `sig`.
    case unexpectedSignature

    public var description: String {
        switch self {
        case .json(let error): "invalid JSON: \(error)"
        case .notAnObject: "event is not a JSON object"
        case .missingField(let field): "missing field \(field)"
        case .wrongType(let field, let expected): "\(field) must be \(expected)"
        case .malformedHex(let field): "\(field) is not lowercase hex of the right length"
        case .invalidPublicKey: "pubkey is not a point on secp256k1"
        case .kindOutOfRange: "kind must be an integer in 0...65535"
        case .negativeTimestamp: "created_at must not be negative"
        case .emptyTag(let index): "tag \(index) is empty"
        case .unexpectedSignature: "an unsigned event must not carry sig"
        }
    }
}

/// Why a well-formed event is not authentic.
public enum EventVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The id is not the hash of the event's fields (the event was altered).
    case idMismatch
    /// The signature does not verify for the pubkey and id.
    case invalidSignature

    public var description: String {
        switch self {
        case .idMismatch: "event id does not match its content"
        case .invalidSignature: "event signature is invalid"
        }
    }
}
