import LinkstrWire
public import NostrProtocol

/// Which ingested messages notify, as in the linkstr app: inbound live roots and inbound active
/// reactions, in sessions that are not archived. Never our own messages (self echoes), never history or a
/// restore, never reaction deactivations.
public enum NotificationDecision {
    public static func notifies(_ applied: LinkstrLedger.Applied, me: String, archived: Set<String>) -> Bool {
        guard applied.origin == .live, applied.message.sender.hex != me else { return false }
        let payload = applied.message.payload
        guard !archived.contains(payload.conversationID) else { return false }
        switch payload.kind {
        case .root: return true
        case .reaction: return payload.reactionActive == true
        default: return false
        }
    }
}

/// What a notification shows.
public struct NotificationContent: Sendable, Equatable {
    public var title: String
    public var body: String
    /// The session to open when the notification is tapped.
    public var sessionID: String

    /// Public so that an app can build one for its previews and tests.
    public init(title: String, body: String, sessionID: String) {
        self.title = title
        self.body = body
        self.sessionID = sessionID
    }
}

/// For an iOS notification service extension: given a gift wrap that came with a push, the text
/// to show, or nil when it should stay generic (not for us, not a notifying kind, an archived
/// session). It never touches the store; names come from the lookups the caller provides.
public struct NotificationResolver: Sendable {
    public var keys: Keys
    public var sessionName: @Sendable (String) -> String?
    public var displayName: @Sendable (String) -> String?
    public var isArchived: @Sendable (String) -> Bool

    public init(
        keys: Keys, sessionName: @escaping @Sendable (String) -> String?, displayName: @escaping @Sendable (String) -> String?,
        isArchived: @escaping @Sendable (String) -> Bool = { _ in false }
    ) {
        self.keys = keys
        self.sessionName = sessionName
        self.displayName = displayName
        self.isArchived = isArchived
    }

    public func resolve(_ wrap: NostrEvent) -> NotificationContent? {
        guard let message = try? LinkstrMessage.open(wrap, keys: keys) else { return nil }
        let me = keys.publicKey.hex
        let applied = LinkstrLedger.Applied(message: message, origin: .live)
        let sessionID = message.payload.conversationID
        guard NotificationDecision.notifies(applied, me: me, archived: isArchived(sessionID) ? [sessionID] : []) else { return nil }
        let sender = displayName(message.sender.hex) ?? message.sender.npub
        let title = sessionName(sessionID) ?? "linkstr"
        switch message.payload.kind {
        case .root:
            let note = message.payload.note.map { " — \($0)" } ?? ""
            return NotificationContent(title: title, body: "\(sender) shared a link\(note)", sessionID: sessionID)
        default:
            return NotificationContent(title: title, body: "\(sender) reacted \(message.payload.emoji ?? "")", sessionID: sessionID)
        }
    }
}
