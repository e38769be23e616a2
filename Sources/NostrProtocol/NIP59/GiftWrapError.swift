/// Why a gift wrap was refused; one case per NIP-59 check, in the order they run.
public enum GiftWrapError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAGiftWrap(kind: UInt16)
    case invalidWrap(EventVerificationError)
    case wrapDecryption(NIP44Error)
    case malformedSeal(EventDecodingError)
    case sealWrongKind(UInt16)
    case sealHasTags
    case invalidSeal(EventVerificationError)
    case sealDecryption(NIP44Error)
    case malformedRumor(EventDecodingError)
    /// The rumor carried a signature; rumors must stay deniable.
    case rumorSigned
    case rumorIDMismatch
    /// `rumor.pubkey != seal.pubkey`: someone sealed a message in another person's name.
    case senderMismatch
    /// The rumor or seal JSON is too long to encrypt.
    case payloadTooLarge
    /// The rumor's pubkey is not the sealing author's.
    case authorMismatch

    public var description: String {
        switch self {
        case .notAGiftWrap(let kind): "not a gift wrap (kind \(kind))"
        case .invalidWrap(let error): "gift wrap: \(error)"
        case .wrapDecryption(let error): "gift wrap decryption: \(error)"
        case .malformedSeal(let error): "seal: \(error)"
        case .sealWrongKind(let kind): "seal has kind \(kind), expected 13"
        case .sealHasTags: "seal must have no tags"
        case .invalidSeal(let error): "seal: \(error)"
        case .sealDecryption(let error): "seal decryption: \(error)"
        case .malformedRumor(let error): "rumor: \(error)"
        case .rumorSigned: "rumor must not be signed"
        case .rumorIDMismatch: "rumor id does not match its content"
        case .senderMismatch: "rumor author differs from seal signer"
        case .payloadTooLarge: "payload too large for NIP-44"
        case .authorMismatch: "rumor pubkey is not the author's key"
        }
    }
}
