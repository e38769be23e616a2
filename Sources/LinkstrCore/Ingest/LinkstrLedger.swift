public import LinkstrWire
import NostrProtocol

/// One account's linkstr state as a value, and the ingest rules of docs/linkstr-wire.md §3 that change
/// it: opened messages go in, an outcome comes out, and pending messages are replayed whenever
/// what they wait for changes. No I/O: the core feeds it, the store persists `takeChanges()`.
public struct LinkstrLedger: Sendable {
    /// A message that took effect: the one ingested, or a pending one it released.
    public struct Applied: Sendable, Equatable {
        public var message: LinkstrMessage
        public var origin: IngestOrigin

        package init(message: LinkstrMessage, origin: IngestOrigin) {
            self.message = message
            self.origin = origin
        }
    }

    /// The result of one `ingest`: the message's own outcome, and every message (it and any
    /// released pending ones) that took effect, in the order they did.
    public struct Report: Sendable, Equatable {
        public var outcome: IngestOutcome
        public var applied: [Applied]
    }

    /// The account's own pubkey (hex).
    public let me: String
    public private(set) var sessionLedger: SessionLedger
    public private(set) var posts: [String: RootPost] = [:]
    public private(set) var reactions: [Reaction.Key: Reaction] = [:]
    public private(set) var deletions: [String: PostDeletion] = [:]
    public private(set) var pending: PendingMessages
    private var seenWrapIDs: Set<String>
    /// Rumors other than roots that took effect (roots are found in `posts`).
    private var appliedRumorIDs: Set<String> = []
    private var postIDsBySession: [String: Set<String>] = [:]
    private var reactionKeysByRoot: [String: Set<Reaction.Key>] = [:]
    private var changes = LedgerChanges()

    public init(
        me: String, sessions: SessionLedger? = nil, posts: [RootPost] = [], reactions: [Reaction] = [],
        deletions: [PostDeletion] = [], seenWrapIDs: Set<String> = [], pendingLimit: Int = PendingMessages.defaultLimit
    ) {
        self.me = me
        self.sessionLedger = sessions ?? SessionLedger(me: me)
        self.seenWrapIDs = seenWrapIDs
        self.pending = PendingMessages(limit: pendingLimit)
        for post in posts { insert(post) }
        for reaction in reactions { insert(reaction) }
        for deletion in deletions { self.deletions[deletion.rootID] = deletion }
    }

    public var sessions: [String: SessionLedger.Session] { sessionLedger.sessions }

    /// The posts of a session, oldest first (the order rule).
    public func posts(in sessionID: String) -> [RootPost] {
        (postIDsBySession[sessionID] ?? []).compactMap { posts[$0] }
            .sorted { EventOrder(createdAt: $0.createdAt, eventID: $0.id) < EventOrder(createdAt: $1.createdAt, eventID: $1.id) }
    }

    /// Every reaction record (active or not) on a post.
    public func reactions(on rootID: String) -> [Reaction] {
        (reactionKeysByRoot[rootID] ?? []).compactMap { reactions[$0] }
    }

    public func hasSeen(wrapID: String) -> Bool { seenWrapIDs.contains(wrapID) }

    /// True before anything was ingested or restored: history into such a store arrives read (R12).
    public var isEmpty: Bool { sessionLedger.sessions.isEmpty && sessionLedger.tombstones.isEmpty && posts.isEmpty }

    /// Returns what changed since the last call and starts over.
    public mutating func takeChanges() -> LedgerChanges {
        defer { changes = LedgerChanges() }
        return changes
    }

    // MARK: Ingest

    public mutating func ingest(_ message: LinkstrMessage, origin: IngestOrigin) -> Report {
        let wrapID = message.wrapID.hex
        guard seenWrapIDs.insert(wrapID).inserted else { return Report(outcome: .duplicate, applied: []) }
        changes.seenWrapIDs.append(wrapID)
        let rumorID = message.rumorID.hex
        // R7: the same root through another wrap (our own echo, a second relay path) only adds
        // its wrap id, to the stored post or to the one still waiting.
        if message.payload.kind == .root, posts[rumorID] != nil {
            if posts[rumorID]!.merge(wrapIDs: [wrapID]) { changes.posts.insert(rumorID) }
            return Report(outcome: .duplicate, applied: [])
        }
        if pending.merge(wrapID: wrapID, into: rumorID) || appliedRumorIDs.contains(rumorID) {
            return Report(outcome: .duplicate, applied: [])
        }
        var applied: [Applied] = []
        let entry = PendingMessages.Entry(message: message, origin: origin, wrapIDs: [wrapID], reason: "")
        let outcome = attempt(entry, applied: &applied)
        return Report(outcome: outcome, applied: applied)
    }

    /// Applies `entry` or holds it, then replays whatever its effect released, until nothing changes.
    private mutating func attempt(_ first: PendingMessages.Entry, applied: inout [Applied]) -> IngestOutcome {
        var outcome: IngestOutcome?
        var work = [first]
        var index = 0
        while index < work.count {
            let entry = work[index]
            index += 1
            let (result, wait, released) = apply(entry)
            if outcome == nil { outcome = result }
            switch result {
            case .applied:
                applied.append(Applied(message: entry.message, origin: entry.origin))
                for dependency in released { work.append(contentsOf: pending.release(dependency)) }
            case .pending(let reason):
                var held = entry
                held.reason = reason
                if let wait, !pending.hold(held, until: wait), index == 1 {
                    outcome = .ignored("too many pending messages")
                }
            case .ignored(let reason):
                // Ruled out by membership: kept (within the limit) in case an older snapshot
                // arrives later and shows the sender was a member then.
                if let wait {
                    var held = entry
                    held.reason = reason
                    _ = pending.hold(held, until: wait)
                }
            case .duplicate:
                break
            }
        }
        return outcome ?? .ignored("nothing to do")
    }

    /// One message against the rules: its outcome, what it would wait for, and what its effect
    /// releases.
    private mutating func apply(_ entry: PendingMessages.Entry) -> (
        IngestOutcome, PendingMessages.Dependency?, [PendingMessages.Dependency]
    ) {
        let message = entry.message
        let sessionID = message.payload.conversationID
        switch message.payload.kind {
        case .sessionCreate, .sessionMembers, .sessionDelete:
            let outcome = sessionLedger.apply(message)
            switch outcome {
            case .applied:
                appliedRumorIDs.insert(message.rumorID.hex)
                changes.sessions.insert(sessionID)
                if message.payload.kind == .sessionDelete {
                    purge(session: sessionID)
                } else {
                    revalidate(session: sessionID, from: message.createdAt)
                }
                return (.applied, nil, [.session(sessionID)])
            case .pending:
                return (outcome, .session(sessionID), [])
            case .ignored, .duplicate:
                return (outcome, nil, [])
            }
        case .root:
            return applyRoot(entry)
        case .reaction:
            return applyReaction(entry)
        case .rootDelete:
            return applyRootDelete(entry)
        }
    }

    private mutating func applyRoot(_ entry: PendingMessages.Entry) -> (
        IngestOutcome, PendingMessages.Dependency?, [PendingMessages.Dependency]
    ) {
        let message = entry.message
        let payload = message.payload
        let rootID = message.rumorID.hex
        if sessionLedger.tombstones[payload.conversationID] != nil { return (.ignored("the session was deleted"), nil, []) }
        guard let session = sessionLedger.sessions[payload.conversationID] else {
            return (.pending("unknown session"), .session(payload.conversationID), [])
        }
        // R6
        guard payload.rootID.isEmpty || payload.rootID.lowercased() == rootID else {
            return (.ignored("root_id differs from the event id"), nil, [])
        }
        guard let url = payload.url.flatMap(LinkURL.normalize) else { return (.ignored("the URL does not normalise"), nil, []) }
        if deletions[rootID] != nil { return (.ignored("the post was deleted"), nil, []) }
        if let refusal = membershipRefusal(session, message, origin: entry.origin) { return refusal }
        let sender = message.sender.hex
        // R12: our own posts and a restore into an empty store are read; the rest starts unread.
        let isRead = sender == me || entry.origin == .restore || entry.origin == .local
        insert(
            RootPost(
                id: rootID, sessionID: session.id, author: sender, url: url, note: payload.note, createdAt: message.createdAt,
                wrapIDs: entry.wrapIDs.sorted(), isRead: isRead))
        changes.posts.insert(rootID)
        return (.applied, nil, [.root(rootID)])
    }

    private mutating func applyReaction(_ entry: PendingMessages.Entry) -> (
        IngestOutcome, PendingMessages.Dependency?, [PendingMessages.Dependency]
    ) {
        let message = entry.message
        let payload = message.payload
        let rootID = payload.rootID.lowercased()
        if sessionLedger.tombstones[payload.conversationID] != nil { return (.ignored("the session was deleted"), nil, []) }
        guard let session = sessionLedger.sessions[payload.conversationID] else {
            return (.pending("unknown session"), .session(payload.conversationID), [])
        }
        // R8
        if deletions[rootID] != nil { return (.ignored("the post was deleted"), nil, []) }
        guard let post = posts[rootID] else { return (.pending("the post has not arrived"), .root(rootID), []) }
        guard post.sessionID == session.id else { return (.ignored("the post is in another session"), nil, []) }
        if let refusal = membershipRefusal(session, message, origin: entry.origin) { return refusal }
        let key = Reaction.Key(sessionID: session.id, rootID: rootID, emoji: payload.emoji ?? "", sender: message.sender.hex)
        let order = EventOrder(message)
        if let current = reactions[key], current.order >= order { return (.ignored("older than the reaction's state"), nil, []) }
        insert(Reaction(key: key, isActive: payload.reactionActive ?? false, order: order, wrapID: entry.message.wrapID.hex))
        appliedRumorIDs.insert(message.rumorID.hex)
        changes.reactions.insert(key)
        return (.applied, nil, [])
    }

    private mutating func applyRootDelete(_ entry: PendingMessages.Entry) -> (
        IngestOutcome, PendingMessages.Dependency?, [PendingMessages.Dependency]
    ) {
        let message = entry.message
        let payload = message.payload
        let rootID = payload.rootID.lowercased()
        if sessionLedger.tombstones[payload.conversationID] != nil { return (.ignored("the session was deleted"), nil, []) }
        guard sessionLedger.sessions[payload.conversationID] != nil else {
            return (.pending("unknown session"), .session(payload.conversationID), [])
        }
        // R9
        if deletions[rootID] != nil { return (.ignored("the post is already deleted"), nil, []) }
        guard let post = posts[rootID] else { return (.pending("the post has not arrived"), .root(rootID), []) }
        guard post.sessionID == payload.conversationID else { return (.ignored("the post is in another session"), nil, []) }
        guard post.author == message.sender.hex else { return (.ignored("only the author deletes a post"), nil, []) }
        remove(post: rootID)
        deletions[rootID] = PostDeletion(
            rootID: rootID, sessionID: post.sessionID, deletedBy: message.sender.hex, order: EventOrder(message))
        changes.deletions.insert(rootID)
        pending.dropReactions(waitingFor: rootID)
        appliedRumorIDs.insert(message.rumorID.hex)
        return (.applied, nil, [])
    }

    /// R5: sender and self active when the message was sent, and for live messages now as well.
    /// A refusal waits when the membership state is not newer than the message (a re-add may be
    /// on its way), and is final otherwise.
    private func membershipRefusal(
        _ session: SessionLedger.Session, _ message: LinkstrMessage,
        origin: IngestOrigin
    ) -> (IngestOutcome, PendingMessages.Dependency?, [PendingMessages.Dependency])? {
        let membership = session.membership
        let sender = message.sender.hex
        var allowed = membership.isActive(sender, at: message.createdAt) && membership.isActive(me, at: message.createdAt)
        if allowed, origin.isLive { allowed = membership.isActiveNow(sender) && membership.isActiveNow(me) }
        if allowed { return nil }
        if session.version < EventOrder(message) { return (.pending("waiting for a membership change"), .session(session.id), []) }
        return (.ignored("sender or self is not an active member"), .session(session.id), [])
    }

    // MARK: Local state

    /// Marks posts read (opening a post or a session); reactions never touch this (R12).
    @discardableResult
    public mutating func markRead(_ postIDs: some Sequence<String>) -> Int {
        var count = 0
        for id in postIDs where posts[id]?.isRead == false {
            posts[id]?.isRead = true
            changes.posts.insert(id)
            count += 1
        }
        return count
    }

    public func unreadCount(in sessionID: String) -> Int {
        (postIDsBySession[sessionID] ?? []).count { posts[$0]?.isRead == false }
    }

    /// A snapshot that arrived after content it should have ruled on: posts and reactions after
    /// `time` whose sender (or self) it shows was not a member go back to waiting, exactly as if
    /// the snapshot had arrived first. This is what makes out-of-order delivery converge.
    ///
    /// Content from the snapshot's own second is left alone: membership is judged in whole
    /// seconds, and a post sent in the same second as a removal, already accepted, most likely
    /// preceded it.
    private mutating func revalidate(session sessionID: String, from time: Int64) {
        guard let session = sessionLedger.sessions[sessionID] else { return }
        let membership = session.membership
        func wasMember(_ sender: String, at time: Int64) -> Bool {
            membership.isActive(sender, at: time) && membership.isActive(me, at: time)
        }
        for id in postIDsBySession[sessionID] ?? [] {
            guard let post = posts[id], post.createdAt > time, !wasMember(post.author, at: post.createdAt) else { continue }
            let reactions = reactions(on: id)
            remove(post: id)
            if let message = post.message { rehold(message, wrapIDs: Set(post.wrapIDs), isRead: post.isRead, session: session) }
            for reaction in reactions {
                guard let message = reaction.message else { continue }
                _ = pending.hold(
                    .init(message: message, origin: .history, wrapIDs: [reaction.wrapID], reason: "the post has not arrived"),
                    until: .root(id))
            }
        }
        for id in postIDsBySession[sessionID] ?? [] {
            for reaction in reactions(on: id)
            where reaction.order.createdAt > time && !wasMember(reaction.key.sender, at: reaction.order.createdAt) {
                reactions[reaction.key] = nil
                reactionKeysByRoot[id]?.remove(reaction.key)
                changes.reactions.insert(reaction.key)
                if let message = reaction.message { rehold(message, wrapIDs: [reaction.wrapID], isRead: false, session: session) }
            }
        }
    }

    /// Holds a message taken back out of the state until the membership changes again.
    private mutating func rehold(_ message: LinkstrMessage, wrapIDs: Set<String>, isRead: Bool, session: SessionLedger.Session) {
        // A read post stays read when it comes back; `restore` is the origin that arrives read.
        let entry = PendingMessages.Entry(
            message: message, origin: isRead ? .restore : .history, wrapIDs: wrapIDs,
            reason: "waiting for a membership change")
        _ = pending.hold(entry, until: .session(session.id))
    }

    // MARK: Indexes

    private mutating func insert(_ post: RootPost) {
        posts[post.id] = post
        postIDsBySession[post.sessionID, default: []].insert(post.id)
    }

    private mutating func insert(_ reaction: Reaction) {
        reactions[reaction.key] = reaction
        reactionKeysByRoot[reaction.key.rootID, default: []].insert(reaction.key)
    }

    private mutating func remove(post id: String) {
        guard let post = posts.removeValue(forKey: id) else { return }
        postIDsBySession[post.sessionID]?.remove(id)
        changes.posts.insert(id)
        for key in reactionKeysByRoot.removeValue(forKey: id) ?? [] {
            reactions[key] = nil
            changes.reactions.insert(key)
        }
    }

    /// R10: a deleted session's posts, reactions, watermarks and pending dependents go.
    private mutating func purge(session sessionID: String) {
        for id in postIDsBySession[sessionID] ?? [] { remove(post: id) }
        postIDsBySession[sessionID] = nil
        for (rootID, deletion) in deletions where deletion.sessionID == sessionID {
            deletions[rootID] = nil
            changes.deletions.insert(rootID)
        }
        pending.drop(session: sessionID)
    }
}

extension LinkstrLedger {
    /// Ingests a batch. History (and a restore) is applied in the order rule's order (R14), so
    /// snapshots come before the content they rule on whatever order the relay paged it in; live
    /// messages keep their arrival order. Reports come back in the batch's input order.
    public mutating func ingest(batch messages: [LinkstrMessage], origin: IngestOrigin) -> [Report] {
        guard origin == .history || origin == .restore else { return messages.map { ingest($0, origin: origin) } }
        let order = messages.indices.sorted { EventOrder(messages[$0]) < EventOrder(messages[$1]) }
        var reports = [Report?](repeating: nil, count: messages.count)
        for index in order { reports[index] = ingest(messages[index], origin: origin) }
        return reports.map { $0! }
    }
}
