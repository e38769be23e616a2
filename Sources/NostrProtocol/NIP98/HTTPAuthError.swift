/// Why an `Authorization: Nostr …` header was refused. Each case is one precise reason, and its
/// `description` is safe to return to the client.
public enum HTTPAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingHeader
    case wrongScheme
    case invalidBase64
    case malformedEvent(EventDecodingError)
    case wrongKind(UInt16)
    case nonEmptyContent
    case expired
    case fromTheFuture
    case missingTag(String)
    case methodMismatch
    case urlMismatch
    case pathMismatch
    case payloadMismatch
    case missingPayload
    case blankNonce
    case nonceTooLong(Int)
    case nonceHasControlCharacters
    case unknownDialect
    case dialectNotAccepted
    case standardNeedsPublicURL
    case invalidID
    case invalidSignature

    public var description: String {
        switch self {
        case .missingHeader: "missing Authorization header"
        case .wrongScheme: "Authorization scheme must be Nostr"
        case .invalidBase64: "authorization event is not valid base64"
        case .malformedEvent(let error): "authorization event is malformed: \(error)"
        case .wrongKind(let kind): "authorization event kind \(kind) is not 27235"
        case .nonEmptyContent: "authorization event content must be empty"
        case .expired: "authorization event is too old"
        case .fromTheFuture: "authorization event is too far in the future"
        case .missingTag(let name): "authorization event is missing the \(name) tag"
        case .methodMismatch: "authorization method does not match the request"
        case .urlMismatch: "authorization url does not match the request"
        case .pathMismatch: "authorization path does not match the request"
        case .payloadMismatch: "authorization payload hash does not match the body"
        case .missingPayload: "authorization event must carry a payload hash for a request with a body"
        case .blankNonce: "authorization nonce is blank"
        case .nonceTooLong(let limit): "authorization nonce is longer than \(limit) bytes"
        case .nonceHasControlCharacters: "authorization nonce must not contain control characters"
        case .unknownDialect: "authorization event has neither a u nor a path tag"
        case .dialectNotAccepted: "authorization dialect not accepted here"
        case .standardNeedsPublicURL: "standard NIP-98 auth needs PUBLIC_URL on the server"
        case .invalidID: "authorization event id is invalid"
        case .invalidSignature: "authorization event signature is invalid"
        }
    }

    /// A short stable code for metrics labels (`linkstr_auth_failures_total{reason}`).
    public var code: String {
        switch self {
        case .missingHeader: "missing_header"
        case .wrongScheme: "wrong_scheme"
        case .invalidBase64: "invalid_base64"
        case .malformedEvent: "malformed_event"
        case .wrongKind: "wrong_kind"
        case .nonEmptyContent: "non_empty_content"
        case .expired: "expired"
        case .fromTheFuture: "from_the_future"
        case .missingTag: "missing_tag"
        case .methodMismatch: "method_mismatch"
        case .urlMismatch: "url_mismatch"
        case .pathMismatch: "path_mismatch"
        case .payloadMismatch: "payload_mismatch"
        case .missingPayload: "missing_payload"
        case .blankNonce: "blank_nonce"
        case .nonceTooLong: "nonce_too_long"
        case .nonceHasControlCharacters: "nonce_control_characters"
        case .unknownDialect: "unknown_dialect"
        case .dialectNotAccepted: "dialect_not_accepted"
        case .standardNeedsPublicURL: "standard_needs_public_url"
        case .invalidID: "invalid_id"
        case .invalidSignature: "invalid_signature"
        }
    }
}
