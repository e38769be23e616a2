import LinkstrWire
import NostrProtocol

/// One participant's state for one emoji on one post (R8): keyed by (session, root, emoji,
/// sender), the newest message under the order rule wins.
public struct Reaction: Sendable, Equatable {
    public struct Key: Sendable, Hashable {
        public var sessionID: String
        public var rootID: String
        public var emoji: String
        public var sender: String

        public init(sessionID: String, rootID: String, emoji: String, sender: String) {
            self.sessionID = sessionID
            self.rootID = rootID
            self.emoji = emoji
            self.sender = sender
        }
    }

    public var key: Key
    public var isActive: Bool
    /// The rumor's time and id.
    public var order: EventOrder
    /// The wrap that carried it, so the message can be held again if a later membership snapshot
    /// shows its sender was not a member then.
    public var wrapID: String

    public init(key: Key, isActive: Bool, order: EventOrder, wrapID: String) {
        self.key = key
        self.isActive = isActive
        self.order = order
        self.wrapID = wrapID
    }

    /// The message this state came from.
    var message: LinkstrMessage? {
        guard let rumorID = try? EventID(hex: order.eventID), let wrap = try? EventID(hex: wrapID),
            let sender = try? PublicKey(hex: key.sender)
        else { return nil }
        let payload = LinkstrPayload(
            conversationID: key.sessionID, rootID: key.rootID, kind: .reaction, timestamp: order.createdAt,
            emoji: key.emoji, reactionActive: isActive)
        return LinkstrMessage(wrapID: wrap, rumorID: rumorID, sender: sender, createdAt: order.createdAt, payload: payload)
    }
}
