import Foundation
import LinkstrCore
import LinkstrWire
import Logging
import NostrProtocol
import NostrRelay
import Synchronization
import TestSupport
import Testing

/// The client core end to end: several accounts, each a `LinkstrAppCore` with its own data
/// directory, talking through a real `nostr-relay` on loopback.
@Suite(.serialized) struct CoreEndToEndTests {
    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-core-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func makeCore(
        relay: RelayFixture, directory: URL = temporaryDirectory(), identity: AppAction? = .createIdentity,
        pageSize: Int = 500, stepSize: Int = 512, sendTimeout: Duration = .seconds(30), logger: Logger = Logger(label: "linkstr.core"),
        configure: (inout CoreConfiguration) -> Void = { _ in }, created: (LinkstrAppCore) -> Void = { _ in }
    ) async throws -> LinkstrAppCore {
        var configuration = CoreConfiguration(dataDirectory: directory)
        configuration.defaultRelays = [relay.url]
        configuration.historyPageSize = pageSize
        configuration.maxHistoryPageSize = pageSize * 8
        configuration.historyStepSize = stepSize
        configuration.sendTimeout = sendTimeout
        configure(&configuration)
        let core = try LinkstrAppCore(configuration: configuration, logger: logger)
        created(core)
        if let identity { #expect(await core.perform(identity) == .done) }
        #expect(await core.perform(.startRelays) == .done)
        return core
    }

    /// Every use waits for something that must happen; 30 s leaves room for a CI machine running
    /// the whole suite at once, and costs nothing when the condition holds sooner.
    static func eventually(within seconds: Double = 30, _ condition: () async -> Bool) async -> Bool {
        await TestSupport.eventually(within: seconds, condition)
    }

    static func pubkey(_ core: LinkstrAppCore) async -> String { await core.state().identity!.pubkey }

    /// What the relay has stored for `filter`, read with a connection of the test's own.
    static func stored(on relay: RelayFixture, _ filter: Filter) async throws -> [NostrEvent] {
        let connection = RelayConnection(url: relay.url, configuration: RelayConfiguration(), logger: Logger(label: "test"))
        let running = Task { try? await connection.run() }
        defer { running.cancel() }
        var events: [NostrEvent] = []
        for await item in await connection.subscribe(id: "check", filters: [filter]) {
            switch item {
            case .event(let event): events.append(event)
            case .endOfStoredEvents, .closed: return events
            }
        }
        return events
    }

    @Test func aliceAndBobShareReactRemoveAndDelete() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = try await Self.makeCore(relay: relay)
        let bobDirectory = Self.temporaryDirectory()
        let bob = try await Self.makeCore(relay: relay, directory: bobDirectory)
        let bobKey = await Self.pubkey(bob), aliceKey = await Self.pubkey(alice)
        let bobUpdates = Task { await bob.updates.prefix { _ in true }.reduce(into: [UInt64]()) { $0.append($1.rev) } }

        // Alice creates a session with Bob and lands in it.
        #expect(await Self.eventually { await alice.state().relays.connectedOrReadOnly == 1 })
        guard case .navigate(let sessionID) = await alice.perform(.createSession(name: "Clips", members: [try PublicKey(hex: bobKey).npub]))
        else {
            Issue.record("no session")
            return
        }
        #expect(sessionID.count == 32 && sessionID == sessionID.uppercased())
        #expect(await alice.state().sessions.rows.map(\.name) == ["Clips"])

        // She posts; Bob sees the session and the post, unread.
        guard
            case .posted(let firstPost) = await alice.perform(
                .post(sessionID: sessionID, url: "youtube.com/watch?v=abc", note: "  watch  "))
        else {
            Issue.record("post failed")
            return
        }
        #expect(await Self.eventually { await bob.state().sessions.rows.first?.unreadCount == 1 })
        #expect(await bob.state().sessions.rows.first?.name == "Clips")
        #expect(await alice.state().sessions.rows.first?.unreadCount == 0, "own posts are read")
        #expect(await bob.notifications.count == 1, "a live inbound root notifies")

        // Bob opens the session: the post is read, with the normalised URL and trimmed note.
        #expect(await bob.perform(.openSession(sessionID)) == .done)
        let feed = try #require(await bob.state().feed)
        #expect(feed.posts.map(\.id) == [firstPost])
        #expect(feed.posts.first?.url == "https://youtube.com/watch?v=abc" && feed.posts.first?.note == "watch")
        #expect(feed.posts.first?.isRead == true && feed.posts.first?.provider == .youtube)
        #expect(await bob.state().sessions.rows.first?.unreadCount == 0)

        // Bob reacts; Alice sees it, and her unread count is untouched by reactions.
        #expect(await bob.perform(.toggleReaction(postID: firstPost, emoji: "👍")) == .done)
        #expect(await alice.perform(.openSession(sessionID)) == .done)
        #expect(await Self.eventually { await alice.state().feed?.posts.first?.reactions.first?.count == 1 })
        #expect(await alice.state().feed?.posts.first?.reactions.first?.includesMe == false)
        #expect(await bob.state().feed?.posts.first?.reactions.first?.includesMe == true)

        // Members cannot use the creator's rights.
        #expect(await bob.perform(.setSessionMembers(sessionID: sessionID, members: [])) == .failed(CoreError.notCreator.description))
        #expect(await bob.perform(.renameSession(sessionID: sessionID, name: "Mine")) == .failed(CoreError.notCreator.description))
        #expect(await bob.perform(.deleteSession(sessionID: sessionID)) == .failed(CoreError.notCreator.description))
        #expect(await bob.state().feed?.name == "Clips")

        // Alice removes Bob: his copy becomes read-only history.
        #expect(await alice.perform(.setSessionMembers(sessionID: sessionID, members: [])) == .done)
        #expect(await Self.eventually { await bob.state().sessions.rows.first?.isActiveMember == false })
        #expect(
            await bob.perform(.post(sessionID: sessionID, url: "https://example.com", note: nil))
                == .failed(CoreError.notActiveMember.description))
        #expect(await bob.perform(.toggleReaction(postID: firstPost, emoji: "👀")) == .failed(CoreError.notActiveMember.description))

        // Alice posts again: Bob never sees it.
        guard case .posted = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/secret", note: nil)) else {
            Issue.record("second post failed")
            return
        }
        #expect(await alice.state().feed?.posts.count == 2)
        try await Task.sleep(for: .milliseconds(500))
        await bob.settle()
        #expect(await bob.state().feed?.posts.map(\.id) == [firstPost])

        // Alice deletes her first post: it disappears for Bob too.
        #expect(await bob.perform(.toggleReaction(postID: firstPost, emoji: "👍")) != .done, "still not a member")
        #expect(await bob.perform(.deletePost(postID: firstPost)) == .failed(CoreError.notAuthor.description))
        #expect(await alice.perform(.deletePost(postID: firstPost)) == .done)
        #expect(await Self.eventually { await bob.state().feed?.posts.isEmpty == true })
        // And the relays were asked (kind 5) to delete the wraps that carried it.
        let deletionFilter = Filter(authors: [try PublicKey(hex: aliceKey)], kinds: [EventKind.deletion])
        #expect(await Self.eventually { (try? await Self.stored(on: relay, deletionFilter))?.isEmpty == false })
        let deletions = try await Self.stored(on: relay, deletionFilter)
        #expect(deletions.count == 1)
        #expect(
            deletions.first.map { DeletionRequest.referencedIDs($0).count >= 2 && $0.tagValues("k") == ["1059"] } == true,
            "every wrap of the post (Bob's and Alice's own copy), kind 1059")
        #expect(await alice.state().feed?.posts.count == 1)

        // Bob's revs were contiguous, ending at his state's rev.
        let bobRev = await bob.state().rev
        await bob.shutdown()
        let revs = await bobUpdates.value
        #expect(revs == Array(1...UInt64(revs.count)) && revs.last == bobRev)

        // Bob restarts and re-syncs everything: the deleted post does not come back.
        let bobAgain = try await Self.makeCore(relay: relay, directory: bobDirectory, identity: nil)
        #expect(await bobAgain.state().identity?.pubkey == bobKey, "the account is restored from the secret store")
        #expect(await bobAgain.perform(.openSession(sessionID)) == .done)
        #expect(await Self.eventually { await bobAgain.state().relays.connectedOrReadOnly == 1 })
        try await Task.sleep(for: .milliseconds(500))
        await bobAgain.settle()
        #expect(await bobAgain.state().feed?.posts.isEmpty == true)

        // A fresh device for Bob (import the key into an empty store) restores the same state, read.
        let bobSecret = try #require(try FileSecretStore(directory: bobDirectory.appendingPathComponent("secrets")).read("nsec.\(bobKey)"))
        let bobFresh = try await Self.makeCore(relay: relay, identity: .importIdentity(Hex.encode(bobSecret)))
        #expect(await Self.eventually { await bobFresh.state().sessions.rows.count == 1 })
        // A wrap dated back past the live window comes with a later page: the restore is read
        // once every page is in.
        #expect(await Self.eventually(within: 20) { await bobFresh.historyComplete })
        await bobFresh.settle()
        #expect(await bobFresh.perform(.openSession(sessionID)) == .done)
        #expect(await bobFresh.state().feed?.posts.isEmpty == true)
        #expect(await bobFresh.state().feed?.members.first { $0.pubkey == aliceKey }?.isCreator == true)
        #expect(await bobFresh.notifications.isEmpty, "history never notifies")

        await alice.shutdown()
        await bobAgain.shutdown()
        await bobFresh.shutdown()
    }

    /// A conversation whose wraps rust-nostr built (session, post, reaction) reaches a core through
    /// the relay and is ingested like our own.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func wrapsBuiltByRustNostrAreIngested() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = Keys.generate(), carol = Keys.generate(), bob = Keys.generate()
        let now = UnixTime.now()
        let session = "0123456789ABCDEF0123456789ABCDEF"
        let create = LinkstrPayload(
            conversationID: session, rootID: "FEDCBA9876543210FEDCBA9876543210", kind: .sessionCreate, timestamp: now - 10,
            sessionName: "From rust", memberPubkeys: [alice, bob, carol].map(\.publicKey.hex))
        let root = LinkstrPayload(
            conversationID: session, kind: .root, url: "https://www.tiktok.com/@a/video/1", note: "rusty", timestamp: now - 5)
        let rootID = LinkstrRumor.make(root, sender: alice.publicKey, createdAt: now - 5).id.hex
        let reaction = LinkstrPayload(
            conversationID: session, rootID: rootID, kind: .reaction, timestamp: now - 2, emoji: "🦀", reactionActive: true)
        var wraps: [NostrEvent] = []
        for (payload, sender, time) in [(create, alice, now - 10), (root, alice, now - 5), (reaction, carol, now - 2)] {
            let rumor = LinkstrRumor.make(payload, sender: sender.publicKey, createdAt: time)
            let json = try #require(
                try await RustNostrPeer.call(
                    "gift_wrap",
                    [
                        "sender_secret_key": .string(sender.secretKey.exportHex()), "receiver_pubkey": .string(bob.publicKey.hex),
                        "rumor": .object([
                            "created_at": .integer(rumor.createdAt), "kind": .integer(44001), "tags": .tags(rumor.tags),
                            "content": .string(rumor.content),
                        ]),
                    ]
                ).stringValue)
            wraps.append(try NostrEvent(json: json))
        }
        // Published in reverse, as relays often deliver: the core stages and replays.
        let publisher = try await Self.makeCore(relay: relay)
        #expect(await Self.eventually { await publisher.state().relays.connectedOrReadOnly == 1 })
        try await publisher.pool.publish(Array(wraps.reversed()))
        let core = try await Self.makeCore(relay: relay, identity: .importIdentity(bob.secretKey.exportNsec()))
        #expect(await Self.eventually { await core.state().sessions.rows.first?.name == "From rust" })
        // rust-nostr dates wraps back up to two days too: one past the live window is paged in.
        #expect(await Self.eventually(within: 20) { await core.historyComplete })
        await core.settle()
        #expect(await core.perform(.openSession(session)) == .done)
        let post = try #require(await core.state().feed?.posts.first)
        #expect(post.id == rootID && post.note == "rusty" && post.provider == .tiktok)
        #expect(post.reactions == [ReactionSummary(emoji: "🦀", count: 1, includesMe: false, participants: [carol.publicKey.npub])])
        await publisher.shutdown()
        await core.shutdown()
    }

    /// History beyond the live subscription's first page is paged in with `until` + `limit`.
    @Test func historyBeyondTheFirstPageIsPagedIn() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = try await Self.makeCore(relay: relay)
        let bobKeys = Keys.generate()
        #expect(await Self.eventually { await alice.state().relays.connectedOrReadOnly == 1 })
        guard case .navigate(let sessionID) = await alice.perform(.createSession(name: "Many", members: [bobKeys.publicKey.hex])) else {
            Issue.record("no session")
            return
        }
        for index in 0..<45 {
            guard case .posted = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/\(index)", note: nil)) else {
                Issue.record("post \(index) failed")
                return
            }
        }
        // Bob signs in with pages of 10: the live page holds 10 of his 46 wraps, the rest is paged.
        let bob = try await Self.makeCore(relay: relay, identity: .importIdentity(bobKeys.secretKey.exportNsec()), pageSize: 10)
        let complete = await Self.eventually(within: 20) {
            let done = await bob.historyComplete
            let paging = await bob.isBackfilling
            return done && !paging
        }
        #expect(complete)
        await bob.settle()
        #expect(await bob.perform(.openSession(sessionID)) == .done)
        #expect(await bob.state().feed?.posts.count == 45)
        #expect(await bob.state().feed?.posts.allSatisfy(\.isRead) == true, "a restore arrives read")
        await alice.shutdown()
        await bob.shutdown()
    }

    /// Gift wraps are backdated up to two days, so the live subscription (`since` two days ago)
    /// misses a wrap made just before it that was backdated the full two days, and anything older.
    /// A short live page is no sign that history is complete: paging goes on below the window. A
    /// later run pages only down to the floor the last complete run reached.
    @Test func historyOlderThanTheLiveWindowIsPagedInDownToTheFloor() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = Keys.generate(), bob = Keys.generate()
        let session = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
        let now = UnixTime.now()
        /// A wrap of `payload` from Alice to Bob whose wrap (the time relays filter on) is dated `wrapAt`.
        func wrap(_ payload: LinkstrPayload, at time: Int64, wrapAt: Int64) throws -> NostrEvent {
            let seal = try GiftWrap.seal(
                LinkstrRumor.make(payload, sender: alice.publicKey, createdAt: time), author: alice, recipient: bob.publicKey,
                createdAt: wrapAt)
            return try GiftWrap.wrap(seal: seal, recipient: bob.publicKey, createdAt: wrapAt)
        }
        func root(_ index: Int, at time: Int64) -> LinkstrPayload {
            LinkstrPayload(conversationID: session, kind: .root, url: "https://example.com/\(index)", timestamp: time)
        }
        let create = LinkstrPayload(
            conversationID: session, rootID: "OP", kind: .sessionCreate, timestamp: now - 900_000, sessionName: "Old",
            memberPubkeys: [alice, bob].map(\.publicKey.hex))
        // A week back, four days back, and two days and a minute back: all before the live window.
        let wraps = [
            try wrap(create, at: now - 900_000, wrapAt: now - 604_800),
            try wrap(root(0, at: now - 800_000), at: now - 800_000, wrapAt: now - 345_600),
            try wrap(root(1, at: now - 700_000), at: now - 700_000, wrapAt: now - 172_860),
        ]
        let publisher = try await Self.makeCore(relay: relay)
        #expect(await Self.eventually { await publisher.state().relays.connectedOrReadOnly == 1 })
        try await publisher.pool.publish(wraps)

        let bobDirectory = Self.temporaryDirectory()
        // Pages of two: the floor shows in where a run stops asking, not in one page holding all.
        let first = try await Self.makeCore(
            relay: relay, directory: bobDirectory, identity: .importIdentity(bob.secretKey.exportNsec()), pageSize: 2)
        #expect(await Self.eventually(within: 20) { await first.historyComplete })
        await first.settle()
        #expect(await first.perform(.openSession(session)) == .done)
        #expect(await first.state().feed?.posts.count == 2, "both roots from before the live window restored")
        let floor = try #require(await first.historyFloor(relay.url), "a complete paging leaves the relay's floor")
        let lowestWindowStart = UnixTime.now() - LinkstrAppCore.wrapBackdating - LinkstrAppCore.historyFloorMargin
        #expect(floor <= lowestWindowStart && floor > lowestWindowStart - 60, "the window's start less the margin")
        await first.shutdown()

        // While Bob is away: a wrap backdated below the next run's window but above the floor
        // and, to show where paging stops, one dated far below it (older than every other wrap).
        // No real wrap can be the second: published after the last run, its backdating would be
        // at most two days.
        try await publisher.pool.publish([
            try wrap(root(2, at: now - 600_000), at: now - 600_000, wrapAt: floor + 1),
            try wrap(root(3, at: now - 500_000), at: now - 500_000, wrapAt: floor - 500_000),
        ])
        let second = try await Self.makeCore(relay: relay, directory: bobDirectory, identity: nil, pageSize: 2)
        #expect(await Self.eventually(within: 20) { await second.historyComplete })
        #expect((await second.historyFloor(relay.url) ?? 0) >= floor, "the floor moves up with each completed run")
        await second.settle()
        #expect(await second.perform(.openSession(session)) == .done)
        let urls = Set(await second.state().feed?.posts.map(\.url) ?? [])
        // Pages of two below its window: the wraps dated two days and a minute back and at the
        // floor, then the ones four days and a week back, past the floor: no page further down
        // was asked for, and the oldest wrap stayed on the relay.
        #expect(
            urls == ["https://example.com/0", "https://example.com/1", "https://example.com/2"],
            "the wrap above the floor paged in; paging stopped at the floor")
        await second.shutdown()

        // A new device has no floor: it pages to the beginning, the wrap below the floor included.
        let fresh = try await Self.makeCore(relay: relay, identity: .importIdentity(bob.secretKey.exportNsec()), pageSize: 2)
        #expect(await Self.eventually(within: 20) { await fresh.historyComplete })
        await fresh.settle()
        #expect(await fresh.perform(.openSession(session)) == .done)
        #expect(await fresh.state().feed?.posts.count == 4)
        await publisher.shutdown()
        await fresh.shutdown()
    }

    /// R14: history is applied in the order rule's order, in steps, and the user's own actions
    /// (here a send, which waits for the relay's OK) run between steps instead of after the restore.
    @Test func anActionDoesNotWaitForARestore() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = Keys.generate(), bob = Keys.generate()
        let session = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        let now = UnixTime.now()
        var plan = [
            (
                LinkstrPayload(
                    conversationID: session, rootID: "OP", kind: .sessionCreate, sessionName: "Big",
                    memberPubkeys: [alice, bob].map(\.publicKey.hex)),
                now - 1_000
            )
        ]
        for index in 0..<599 {
            plan.append(
                (LinkstrPayload(conversationID: session, kind: .root, url: "https://example.com/\(index)"), now - 999 + Int64(index)))
        }
        // Wraps backdated by at most a day: one backdated to within seconds of the full two days
        // falls outside the live window the core asks for half a minute later, arrives with the
        // next page instead, and moves every later step's messages along by one.
        let wraps = try await withThrowingTaskGroup(of: [NostrEvent].self) { group in
            for part in stride(from: 0, to: plan.count, by: 150) {
                let slice = plan[part..<min(part + 150, plan.count)]
                group.addTask {
                    try slice.map { payload, time in
                        let rumor = LinkstrRumor.make(payload, sender: alice.publicKey, createdAt: time)
                        return try GiftWrap.wrap(
                            seal: GiftWrap.seal(rumor, author: alice, recipient: bob.publicKey), recipient: bob.publicKey,
                            createdAt: now - Int64.random(in: 0...86_400))
                    }
                }
            }
            return try await group.reduce(into: [NostrEvent]()) { $0 += $1 }
        }
        let publisher = try await Self.makeCore(relay: relay)
        #expect(await Self.eventually { await publisher.state().relays.connectedOrReadOnly == 1 })
        // In chunks: 600 OKs awaited at once from the Python relay, on a machine busy with the
        // rest of the suite, once ran past the per-event OK timeout.
        for start in stride(from: 0, to: wraps.count, by: 100) {
            try await publisher.pool.publish(Array(wraps[start..<min(start + 100, wraps.count)]))
        }
        await publisher.shutdown()

        // The send is queued from inside the restore, as the step that applies messages 200..<220
        // begins: an action timed from outside (poll until the restore is seen, then send) once
        // arrived after the last step on a loaded machine, and proved nothing. Queued here, it
        // must run right behind this step, not behind the rest of the restore.
        let queuedAt = Mutex<Int?>(nil)
        let coreBox = Mutex<LinkstrAppCore?>(nil)
        let pageHeld = Mutex<Int?>(nil)
        let core = try await Self.makeCore(
            relay: relay, identity: .importIdentity(bob.secretKey.exportNsec()), pageSize: 1_000, stepSize: 20,
            configure: { configuration in
                configuration.willApplyHistoryStep = { applied, total in
                    guard applied >= 200, let core = coreBox.withLock({ $0 }) else { return }
                    pageHeld.withLock { $0 = $0 ?? total }
                    let first = queuedAt.withLock { queued in
                        defer { queued = queued ?? applied }
                        return queued == nil
                    }
                    if first { core.dispatch(.createSession(name: "Mine", members: [])) }
                }
            },
            created: { core in coreBox.withLock { $0 = core } })
        // Every published slice, in order: the one where "Mine" first appears shows how far the
        // restore had got when the send was applied (history is applied oldest first).
        let sessionSlices = Task {
            var slices: [SessionListView] = []
            for await update in core.updates {
                if case .sessions(let view) = update.slice { slices.append(view) }
            }
            return slices
        }
        #expect(await Self.eventually(within: 60) { await core.historyComplete })
        #expect(queuedAt.withLock { $0 } == 200, "the send was queued at \(queuedAt.withLock { $0 } ?? -1) messages applied")
        #expect(pageHeld.withLock { $0 } == 600, "the first page held \(pageHeld.withLock { $0 } ?? -1) of 600 messages")
        #expect(await core.perform(.openSession(session)) == .done)
        let restored = await core.state().feed?.posts.count, complete = await core.historyComplete
        #expect(restored == 599, "restored \(restored ?? -1) of 599 posts; history complete: \(complete)")
        let state = await core.state()
        #expect(
            state.sessions.rows.map(\.name).sorted() == ["Big", "Mine"],
            "sessions \(state.sessions.rows.map(\.name)); toast \(state.toast ?? "none")")
        let newest = now - 999 + 598
        await core.shutdown()
        let slices = await sessionSlices.value
        let whenSent = try #require(slices.first { $0.rows.contains { $0.name == "Mine" } })
        // 220 messages applied: the session's creation and the roots up to index 218.
        let restoredThen = whenSent.rows.first { $0.id == session }?.lastActivity ?? 0
        let behindTheStep = now - 999 + 218
        #expect(
            restoredThen == behindTheStep,
            "the send was applied with the restore at \(restoredThen), not right behind its step (\(behindTheStep)); the end is \(newest)")
        #expect(slices.last?.rows.first { $0.id == session }?.lastActivity == newest)
    }

    /// A recipient's inbox list (kind 10050) is looked up once and used for
    /// `recipientInboxRelaysTTL`: a newer list reaches the sender's sends after that, not before.
    @Test func aRecipientsInboxListIsUsedForItsLifetimeThenLookedUpAgain() async throws {
        let home = try RelayFixture(), first = try RelayFixture(), second = try RelayFixture()
        for relay in [home, first, second] { try await relay.start() }
        defer { for relay in [home, first, second] { relay.kill() } }
        let lifetime: Duration = .seconds(10)
        let alice = try await Self.makeCore(relay: home) { configuration in
            configuration.allowPrivateRecipientRelays = true
            configuration.recipientInboxRelaysTTL = lifetime
        }
        #expect(await Self.eventually { await alice.state().relays.connectedOrReadOnly == 1 })
        let bob = Keys.generate()
        let now = UnixTime.now()
        func list(_ relay: RelayFixture, at createdAt: Int64) throws -> NostrEvent {
            InboxRelayList.event(author: bob.publicKey, relays: [try RelayURL(relay.url)], createdAt: createdAt).signed(by: bob)
        }
        /// Wraps to Bob that `relay` holds.
        func wrapsToBob(on relay: RelayFixture) async throws -> Int {
            try await Self.stored(on: relay, Filter(kinds: [EventKind.giftWrap], tags: ["p": [bob.publicKey.hex]])).count
        }
        func sent(_ result: ActionResult) -> Bool { if case .navigate = result { true } else { false } }
        try await alice.pool.publish([try list(first, at: now - 10)])
        // The list is looked up during this send: its lifetime starts between these two instants.
        let beforeLookup = ContinuousClock.now
        #expect(sent(await alice.perform(.createSession(name: "One", members: [bob.publicKey.hex]))))
        let afterLookup = ContinuousClock.now
        // A send returns once one relay accepted each wrap; the inbox's copy may still be on its way.
        #expect(await Self.eventually { (try? await wrapsToBob(on: first)) == 1 }, "sent to the inbox Bob's list names")

        // Bob moves his inbox; within the lifetime Alice still uses what she looked up.
        try await alice.pool.publish([try list(second, at: now)])
        #expect(sent(await alice.perform(.createSession(name: "Two", members: [bob.publicKey.hex]))))
        // (A machine too slow to send within the lifetime cannot tell; it checks the rest.)
        if ContinuousClock.now - beforeLookup < lifetime {
            #expect(await Self.eventually { (try? await wrapsToBob(on: first)) == 2 }, "the list looked up before, within its lifetime")
            #expect(try await wrapsToBob(on: second) == 0)
        }

        // Past the lifetime the list is looked up again: the new inbox.
        try await Task.sleep(until: afterLookup + lifetime, clock: .continuous)
        #expect(sent(await alice.perform(.createSession(name: "Three", members: [bob.publicKey.hex]))))
        #expect(await Self.eventually { (try? await wrapsToBob(on: second)) == 1 }, "the newer list, looked up again")
        #expect(try await wrapsToBob(on: first) <= 2, "the old inbox gets no more")
        await alice.shutdown()
    }

    @Test func sendingIsGatedOnRelaysAndBadInputChangesNothing() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let core = try await Self.makeCore(relay: relay)
        #expect(await core.perform(.createSession(name: "  ", members: [])) == .failed(CoreError.blankSessionName.description))
        #expect(
            await core.perform(.createSession(name: "X", members: ["npub1nope"]))
                == .failed(CoreError.invalidMember("npub1nope").description))
        #expect(
            await core.perform(.addRelay("https://relay.example"))
                == .failed(CoreError.invalidRelayURL("https://relay.example").description))
        #expect(await core.perform(.addRelay(relay.url)) == .failed(CoreError.duplicateRelay.description))
        #expect(await core.state().relays.total == 1)
        #expect(await core.state().sessions.rows.isEmpty)

        // With every relay disabled, a send fails at once rather than after the timeout.
        #expect(await core.perform(.setRelayEnabled(relay.url, false)) == .done)
        #expect(await core.perform(.startRelays) == .done)
        let started = ContinuousClock.now
        #expect(await core.perform(.createSession(name: "X", members: [])) == .failed(RelayPool.SendError.noEnabledRelays.description))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(await core.state().relays.rows.first?.status == .disabled)
        #expect(await core.state().toast == RelayPool.SendError.noEnabledRelays.description)

        // Logging out with clearing erases the account's rows and keys.
        let pubkey = await Self.pubkey(core)
        #expect(await core.perform(.logout(clearData: true)) == .done)
        #expect(await core.state().identity == nil)
        #expect(await core.perform(.createSession(name: "X", members: [])) == .failed(CoreError.notSignedIn.description))
        await core.shutdown()
        _ = pubkey
    }

    /// A wrap whose payload names a kind no client knows, the kind holding a newline, a forged log
    /// line and a terminal escape: the core drops it, and the log line saying so carries the
    /// sender's text escaped, so a sender cannot forge the app's log.
    @Test func aDroppedWrapIsLoggedWithTheSendersTextEscaped() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = Keys.generate(), bob = Keys.generate()
        let forged = "2026-11-24T06:00:00+0000 critical linkstr : forged"
        let content = JSONValue.object([
            "kind": .string("poll\n\(forged)\u{1b}[2K"), "conversation_id": .string(String(repeating: "C", count: 32)),
        ]).serialized
        let wrap = try GiftWrap.make(
            UnsignedEvent(pubkey: alice.publicKey, kind: LinkstrRumor.kind, content: content), author: alice, recipient: bob.publicKey)
        let publisher = try await Self.makeCore(relay: relay)
        #expect(await Self.eventually { await publisher.state().relays.connectedOrReadOnly == 1 })
        try await publisher.pool.publish([wrap])

        let log = CapturedLog()
        let core = try await Self.makeCore(
            relay: relay, identity: .importIdentity(bob.secretKey.exportNsec()),
            logger: Logger(label: "linkstr.core") { _ in log.handler() })
        let dropped = { log.lines.withLock { $0.filter { $0.contains("dropped a wrap") } } }
        #expect(await Self.eventually(within: 20) { !dropped().isEmpty }, "the wrap was dropped and logged")
        for line in dropped() {
            #expect(!line.contains("\n") && !line.contains("\u{1b}"), "no raw newline or escape: \(line)")
            #expect(
                line.contains(#"poll\n2026-11-24T06:00:00+0000 critical"#) && line.contains(#"\u{1b}[2K"#),
                "escaped, still readable: \(line)")
        }
        await core.shutdown()
        await publisher.shutdown()
    }
}
