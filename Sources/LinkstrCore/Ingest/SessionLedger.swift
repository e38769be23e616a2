public import LinkstrWire
import NostrProtocol

/// The session rules of docs/linkstr-wire.md §3 as a value: `session_create`, `session_members` and
/// `session_delete` messages (already opened and validated) go in, an outcome comes out. Holding
/// pending messages and replaying them is the core's job; this only says which it is.
public struct SessionLedger: Sendable, Equatable {
    public struct Session: Sendable, Equatable {
        public var id: String
        public var name: String
        public var creator: String
        public var membership: Membership
        /// The order of the last applied `session_create` or `session_members`.
        public var version: EventOrder

        public init(id: String, name: String, creator: String, membership: Membership, version: EventOrder) {
            self.id = id
            self.name = name
            self.creator = creator
            self.membership = membership
            self.version = version
        }
    }

    /// A deleted session: its data is gone, this stays so history cannot bring it back.
    public struct Tombstone: Sendable, Equatable {
        public var deletedBy: String
        public var order: EventOrder

        public init(deletedBy: String, order: EventOrder) {
            self.deletedBy = deletedBy
            self.order = order
        }
    }

    public typealias Outcome = IngestOutcome

    /// The account's own pubkey (hex).
    public let me: String
    public private(set) var sessions: [String: Session] = [:]
    public private(set) var tombstones: [String: Tombstone] = [:]

    public init(me: String, sessions: [String: Session] = [:], tombstones: [String: Tombstone] = [:]) {
        self.me = me
        self.sessions = sessions
        self.tombstones = tombstones
    }

    public mutating func apply(_ message: LinkstrMessage) -> Outcome {
        let payload = message.payload
        let id = payload.conversationID
        let sender = message.sender.hex
        let order = EventOrder(message)
        if let tombstone = tombstones[id] {
            // R10: the recorded deleter's newer delete moves the tombstone; nothing else counts.
            if payload.kind == .sessionDelete, tombstone.deletedBy == sender, order > tombstone.order {
                tombstones[id]?.order = order
                return .applied
            }
            return .ignored("the session was deleted")
        }
        switch payload.kind {
        case .sessionCreate:
            // R1
            let members = Set(payload.memberPubkeys ?? [])
            guard members.contains(sender), members.contains(me) else { return .ignored("sender and self must be members") }
            let snapshot = Membership.Snapshot(order: order, members: members)
            guard var session = sessions[id] else {
                sessions[id] = Session(
                    id: id, name: payload.sessionName ?? "", creator: sender, membership: Membership(snapshots: [snapshot]), version: order)
                return .applied
            }
            guard session.creator == sender else { return .ignored("only the creator can re-create a session") }
            return record(snapshot, name: payload.sessionName, in: &session)
        case .sessionMembers:
            let members = Set(payload.memberPubkeys ?? [])
            guard var session = sessions[id] else {
                // R3: a snapshot can bring an unknown session into being.
                guard members.contains(me), members.contains(sender), let name = payload.sessionName, !name.isBlank else {
                    return .pending("unknown session")
                }
                let snapshot = Membership.Snapshot(order: order, members: members)
                sessions[id] = Session(id: id, name: name, creator: sender, membership: Membership(snapshots: [snapshot]), version: order)
                return .applied
            }
            // R2. The creator is always in the effective member set.
            guard session.creator == sender else { return .ignored("only the creator changes members") }
            return record(
                Membership.Snapshot(order: order, members: members.union([session.creator])), name: payload.sessionName, in: &session)
        case .sessionDelete:
            // R10
            if let session = sessions[id], session.creator != sender { return .ignored("only the creator deletes a session") }
            sessions[id] = nil
            tombstones[id] = Tombstone(deletedBy: sender, order: order)
            return .applied
        case .root, .rootDelete, .reaction:
            return sessions[id] == nil ? .pending("unknown session") : .ignored("not a session message")
        }
    }

    /// The creator's snapshot: a newer one sets the current members and name (R1, R2: they are
    /// monotonic); an older one only fills in the membership history.
    private mutating func record(_ snapshot: Membership.Snapshot, name: String?, in session: inout Session) -> Outcome {
        guard session.membership.insert(snapshot) else { return .ignored("older than the session's state") }
        if snapshot.order > session.version {
            if let name, !name.isBlank { session.name = name }
            session.version = snapshot.order
        }
        sessions[session.id] = session
        return .applied
    }
}
