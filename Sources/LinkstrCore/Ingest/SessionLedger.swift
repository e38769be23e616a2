/// The session rules of linkstr-wire.md §3 as a value: `session_create`, `session_members` and
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
    }

    /// A deleted session: its data is gone, this stays so history cannot bring it back.
    public struct Tombstone: Sendable, Equatable {
        public var deletedBy: String
        public var order: EventOrder
    }

    public enum Outcome: Sendable, Equatable {
        case applied
        case ignored(String)
        /// Held until what it depends on arrives (for example the session itself).
        case pending(String)
    }

    /// The account's own pubkey (hex).
    public let me: String
    public private(set) var sessions: [String: Session] = [:]
    public private(set) var tombstones: [String: Tombstone] = [:]

    public init(me: String) {
        self.me = me
    }

    public mutating func apply(_ message: LinkstrMessage) -> Outcome {
        let payload = message.payload
        let id = payload.conversationID
        let sender = message.sender.hex
        let order = EventOrder(message)
        if tombstones[id] != nil { return .ignored("the session was deleted") }
        switch payload.kind {
        case .sessionCreate:
            // R1
            let members = Set(payload.memberPubkeys ?? [])
            guard members.contains(sender), members.contains(me) else { return .ignored("sender and self must be members") }
            if var session = sessions[id] {
                guard session.creator == sender else { return .ignored("only the creator can re-create a session") }
                guard order > session.version else { return .ignored("older than the session's state") }
                session.name = payload.sessionName ?? session.name
                session.membership.apply(snapshot: members, at: message.createdAt)
                session.version = order
                sessions[id] = session
            } else {
                var membership = Membership()
                membership.apply(snapshot: members, at: message.createdAt)
                sessions[id] = Session(id: id, name: payload.sessionName ?? "", creator: sender, membership: membership, version: order)
            }
            return .applied
        case .sessionMembers:
            let members = Set(payload.memberPubkeys ?? [])
            guard var session = sessions[id] else {
                // R3: a snapshot can bring an unknown session into being.
                guard members.contains(me), members.contains(sender), let name = payload.sessionName, !name.isBlank else {
                    return .pending("unknown session")
                }
                var membership = Membership()
                membership.apply(snapshot: members, at: message.createdAt)
                sessions[id] = Session(id: id, name: name, creator: sender, membership: membership, version: order)
                return .applied
            }
            // R2
            guard session.creator == sender else { return .ignored("only the creator changes members") }
            guard order > session.version else { return .ignored("older than the session's state") }
            session.membership.apply(snapshot: members, at: message.createdAt)
            if let name = payload.sessionName, !name.isBlank { session.name = name }
            session.version = order
            sessions[id] = session
            return .applied
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
}
