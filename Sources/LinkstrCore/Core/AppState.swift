/// Everything a screen shows, as one value. The core owns it; the UI renders it. `rev` grows by
/// one with every published change, so a renderer that sees a gap knows to resync from
/// `LinkstrAppCore.state()`.
public struct AppState: Sendable, Equatable {
    public var rev: UInt64 = 0
    public var identity: IdentityView?
    public var sessions = SessionListView()
    /// The open session's feed (nil when none is open).
    public var feed: SessionFeedView?
    /// The open post (nil when none is open).
    public var postDetail: PostDetailView?
    public var contacts: [ContactView] = []
    public var relays = RelaysView()
    /// The last error or notice to show briefly.
    public var toast: String?

    public init() {}
}

public struct IdentityView: Sendable, Equatable {
    public var pubkey: String
    public var npub: String
}

public enum SessionListMode: String, Sendable, Equatable, CaseIterable {
    case active
    case archived
}

public struct SessionListView: Sendable, Equatable {
    public var mode: SessionListMode = .active
    public var rows: [SessionRow] = []
    /// Whether the archive toggle is shown.
    public var hasArchived = false
}

public struct SessionRow: Sendable, Equatable, Identifiable {
    public var id: String
    public var name: String
    public var isArchived: Bool
    public var unreadCount: Int
    /// Time of the newest post, or of the session's last change.
    public var lastActivity: Int64
    public var memberCount: Int
    public var isCreator: Bool
    /// False once we were removed: the session stays as read-only history.
    public var isActiveMember: Bool
}

public struct MemberView: Sendable, Equatable {
    public var pubkey: String
    public var displayName: String
    public var isCreator: Bool
    public var isActive: Bool
}

public struct ReactionSummary: Sendable, Equatable {
    public var emoji: String
    public var count: Int
    public var includesMe: Bool
    /// Who reacted with it (display names), in a stable order.
    public var participants: [String]

    /// Public so that an app can build one for its previews and tests.
    public init(emoji: String, count: Int, includesMe: Bool, participants: [String]) {
        self.emoji = emoji
        self.count = count
        self.includesMe = includesMe
        self.participants = participants
    }
}

public struct PostView: Sendable, Equatable, Identifiable {
    public var id: String
    public var author: String
    public var authorName: String
    public var isOwn: Bool
    public var url: String
    public var note: String?
    public var createdAt: Int64
    public var isRead: Bool
    public var provider: LinkProvider?
    public var playback: PlaybackMode?
    public var reactions: [ReactionSummary]
}

public struct SessionFeedView: Sendable, Equatable {
    public var sessionID: String
    public var name: String
    public var isCreator: Bool
    /// Posting and reacting need us to be an active member.
    public var canPost: Bool
    public var members: [MemberView]
    /// Oldest first.
    public var posts: [PostView]
}

public struct PostDetailView: Sendable, Equatable {
    public var sessionID: String
    public var post: PostView
    public var deepLink: String?
    public var embedURL: String?
}

public struct ContactView: Sendable, Equatable {
    public var pubkey: String
    public var npub: String
    public var alias: String?
    public var displayName: String
}

public struct RelayRow: Sendable, Equatable {
    public var url: String
    public var enabled: Bool
    public var status: RelayStatus
}

public struct RelaysView: Sendable, Equatable {
    public var rows: [RelayRow] = []
    public var connectedOrReadOnly = 0
    public var total = 0
    /// The account's NIP-17 inbox relays (kind 10050), normalised, in the list's order.
    public var inbox: [String] = []

    /// The header figure, `connected_or_readonly / total`.
    public var summary: String { "\(connectedOrReadOnly) / \(total)" }
}
