import LinkstrWire
import NostrProtocol

/// A root post: a link (and optional note) shared in a session. Its id is the rumor id (R6).
public struct RootPost: Sendable, Equatable, Identifiable {
    public var id: String
    public var sessionID: String
    public var author: String
    /// Normalised (`LinkURL.normalize`).
    public var url: String
    public var note: String?
    public var createdAt: Int64
    /// The gift wraps that carried it (R7), sorted; the targets of a later kind-5 request.
    public var wrapIDs: [String]
    public var isRead: Bool

    public init(
        id: String, sessionID: String, author: String, url: String, note: String?, createdAt: Int64, wrapIDs: [String], isRead: Bool
    ) {
        self.id = id
        self.sessionID = sessionID
        self.author = author
        self.url = url
        self.note = note
        self.createdAt = createdAt
        self.wrapIDs = wrapIDs
        self.isRead = isRead
    }

    /// The message this post came from.
    var message: LinkstrMessage? {
        guard let rumorID = try? EventID(hex: id), let wrap = wrapIDs.first.flatMap({ try? EventID(hex: $0) }),
            let sender = try? PublicKey(hex: author)
        else { return nil }
        let payload = LinkstrPayload(conversationID: sessionID, kind: .root, url: url, note: note, timestamp: createdAt)
        return LinkstrMessage(wrapID: wrap, rumorID: rumorID, sender: sender, createdAt: createdAt, payload: payload)
    }

    mutating func merge(wrapIDs more: some Sequence<String>) -> Bool {
        let merged = Set(wrapIDs).union(more)
        guard merged.count != wrapIDs.count else { return false }
        wrapIDs = merged.sorted()
        return true
    }
}
