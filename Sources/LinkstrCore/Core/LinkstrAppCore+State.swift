import NostrProtocol

extension LinkstrAppCore {
    /// Every slice from the account's current data (the core keeps no second copy to drift).
    func buildState() -> AppState {
        var state = AppState()
        state.toast = toast
        state.sessions.mode = listMode
        guard let account else { return state }
        state.identity = IdentityView(pubkey: account.me, npub: account.keys.publicKey.npub)
        let ledger = account.ledger
        let names = Self.displayNames(account)

        var rows: [SessionRow] = []
        for session in ledger.sessions.values {
            let posts = ledger.posts(in: session.id)
            rows.append(
                SessionRow(
                    id: session.id, name: session.name, isArchived: account.archived.contains(session.id),
                    unreadCount: posts.count { !$0.isRead }, lastActivity: max(posts.last?.createdAt ?? 0, session.version.createdAt),
                    memberCount: session.membership.active.count, isCreator: session.creator == account.me,
                    isActiveMember: session.membership.isActiveNow(account.me)))
        }
        state.sessions.hasArchived = rows.contains(where: \.isArchived)
        state.sessions.rows = rows.filter { $0.isArchived == (listMode == .archived) }
            .sorted { ($0.lastActivity, $0.id) > ($1.lastActivity, $1.id) }

        if let sessionID = openSessionID, let feed = Self.feed(sessionID, account: account) {
            state.feed = feed
            if let postID = openPostID, let post = ledger.posts[postID], post.sessionID == sessionID {
                let classification = LinkClassification.classify(post.url)
                state.postDetail = PostDetailView(
                    sessionID: sessionID, post: Self.postView(post, ledger: ledger, me: account.me, names: names),
                    deepLink: DeepLink.make(for: post.url), embedURL: classification?.embedURL)
            }
        }

        state.contacts = account.contacts.follows.map { pubkey in
            ContactView(
                pubkey: pubkey, npub: (try? PublicKey(hex: pubkey).npub) ?? pubkey, alias: account.contacts.aliases[pubkey],
                displayName: names(pubkey))
        }

        state.relays.rows = account.relays.map { entry in
            RelayRow(
                url: entry.url, enabled: entry.enabled,
                status: entry.enabled ? (relayStatuses[entry.url] ?? .connecting) : .disabled)
        }
        state.relays.total = account.relays.count
        state.relays.inbox = account.inbox.relays
        state.relays.connectedOrReadOnly = state.relays.rows.count { $0.status.isConnectedOrReadOnly }
        return state
    }

    /// Alias → profile name → npub.
    private static func displayNames(_ account: Account) -> (String) -> String {
        { pubkey in account.contacts.displayName(for: pubkey, profileName: account.profiles.name(for: pubkey)) }
    }

    /// One session's feed: members and posts, oldest first, with reaction summaries.
    private static func feed(_ sessionID: String, account: Account) -> SessionFeedView? {
        guard let session = account.ledger.sessions[sessionID] else { return nil }
        let names = displayNames(account)
        let members = session.membership.everKnown.sorted().map { pubkey in
            MemberView(
                pubkey: pubkey, displayName: names(pubkey), isCreator: pubkey == session.creator,
                isActive: session.membership.isActiveNow(pubkey))
        }
        return SessionFeedView(
            sessionID: sessionID, name: session.name, isCreator: session.creator == account.me,
            canPost: session.membership.isActiveNow(account.me), members: members,
            posts: account.ledger.posts(in: sessionID).map { postView($0, ledger: account.ledger, me: account.me, names: names) })
    }

    private static func postView(_ post: RootPost, ledger: LinkstrLedger, me: String, names: (String) -> String) -> PostView {
        let classification = LinkClassification.classify(post.url)
        return PostView(
            id: post.id, author: post.author, authorName: names(post.author), isOwn: post.author == me, url: post.url, note: post.note,
            createdAt: post.createdAt, isRead: post.isRead, provider: classification?.provider, playback: classification?.playback,
            reactions: Self.summaries(ledger.reactions(on: post.id), me: me, names: names))
    }

    /// Active reactions per emoji: count, whether we are among them, and who (most used first).
    static func summaries(_ reactions: [Reaction], me: String, names: (String) -> String) -> [ReactionSummary] {
        var byEmoji: [String: [String]] = [:]
        for reaction in reactions where reaction.isActive { byEmoji[reaction.key.emoji, default: []].append(reaction.key.sender) }
        return byEmoji.map { emoji, senders in
            ReactionSummary(emoji: emoji, count: senders.count, includesMe: senders.contains(me), participants: senders.map(names).sorted())
        }
        .sorted { ($0.count, $1.emoji) > ($1.count, $0.emoji) }
    }
}

extension LinkstrAppCore {
    /// The feed of `sessionID` as it is now, without opening it (opening marks posts read).
    public func stateFeedSnapshot(_ sessionID: String) -> SessionFeedView? {
        account.flatMap { Self.feed(sessionID, account: $0) }
    }
}
