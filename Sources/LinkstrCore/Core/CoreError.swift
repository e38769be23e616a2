/// A refused action, with the reason the UI shows.
public enum CoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case notSignedIn
    case alreadySignedIn
    case invalidSecretKey
    case invalidRelayURL(String)
    case duplicateRelay
    case unknownRelay
    case blankSessionName
    case invalidMember(String)
    /// An inbox relay change that cannot be made; the text says why.
    case invalidInboxRelay(String)
    case unknownSession
    case notCreator
    case notActiveMember
    case invalidURL
    case unknownPost
    case notAuthor
    case blankEmoji
    case storeUnavailable(String)
    case pushNotConfigured
    case noPushDevice
    case gatewayServesNoInbox

    public var description: String {
        switch self {
        case .notSignedIn: "no account is signed in"
        case .alreadySignedIn: "an account is already signed in; log out first"
        case .invalidSecretKey: "not a valid nsec or hex secret key"
        case .invalidRelayURL(let url): "not a relay URL (ws:// or wss:// with a host): \(url)"
        case .duplicateRelay: "that relay is already in the list"
        case .unknownRelay: "that relay is not in the list"
        case .blankSessionName: "a session needs a name"
        case .invalidMember(let text): "not a valid npub or hex public key: \(text)"
        case .invalidInboxRelay(let reason): reason
        case .unknownSession: "no such session"
        case .notCreator: "only the session's creator can do that"
        case .notActiveMember: "you are not an active member of this session"
        case .invalidURL: "the link must be an http or https URL with a host"
        case .unknownPost: "no such post"
        case .notAuthor: "only the post's author can delete it"
        case .blankEmoji: "a reaction needs an emoji"
        case .storeUnavailable(let reason): reason
        case .pushNotConfigured: "no push gateway is configured"
        case .noPushDevice: "no device is registered for pushes"
        case .gatewayServesNoInbox: "the push gateway serves no inbox relay (INBOX_RELAY is off there)"
        }
    }
}
