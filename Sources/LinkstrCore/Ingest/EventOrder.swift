public import LinkstrWire
import NostrProtocol

/// linkstr's order rule (docs/linkstr-wire.md §3): a newer rumor `created_at` wins; on equal
/// timestamps the greater event-id string wins.
public struct EventOrder: Comparable, Hashable, Sendable {
    public var createdAt: Int64
    public var eventID: String

    public init(createdAt: Int64, eventID: String) {
        self.createdAt = createdAt
        self.eventID = eventID
    }

    public init(_ message: LinkstrMessage) {
        self.init(createdAt: message.createdAt, eventID: message.rumorID.hex)
    }

    public static func < (lhs: EventOrder, rhs: EventOrder) -> Bool {
        (lhs.createdAt, lhs.eventID) < (rhs.createdAt, rhs.eventID)
    }
}
