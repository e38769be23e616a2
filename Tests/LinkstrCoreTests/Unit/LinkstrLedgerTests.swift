import LinkstrCore
import LinkstrWire
import NostrProtocol
import TestSupport
import Testing

/// The ingest rules of docs/linkstr-wire.md §3 beyond the session ledger (R4–R12, dedupe, pending and
/// replay) on the account ledger, as a value.
@Suite struct LinkstrLedgerTests {
    static let me = Keys.generate().publicKey, alice = Keys.generate().publicKey, bob = Keys.generate().publicKey
    static let mallory = Keys.generate().publicKey

    static func randomID() -> String { Hex.encode(SecureRandom.bytes(32)) }

    /// A message as `LinkstrMessage.open` would return it.
    static func message(
        _ payload: LinkstrPayload, from sender: PublicKey, at time: Int64, rumorID: String = randomID(),
        wrapID: String = randomID()
    ) -> LinkstrMessage {
        LinkstrMessage(
            wrapID: try! EventID(hex: wrapID), rumorID: try! EventID(hex: rumorID), sender: sender, createdAt: time, payload: payload)
    }

    static func create(_ members: [PublicKey], by creator: PublicKey = alice, at time: Int64 = 100, session: String = "S") -> LinkstrMessage
    {
        message(
            LinkstrPayload(
                conversationID: session, rootID: "OP1", kind: .sessionCreate, timestamp: time, sessionName: "Friends",
                memberPubkeys: members.map(\.hex)), from: creator, at: time)
    }

    static func members(_ members: [PublicKey], by creator: PublicKey = alice, at time: Int64, session: String = "S") -> LinkstrMessage {
        message(
            LinkstrPayload(
                conversationID: session, rootID: randomID(), kind: .sessionMembers, timestamp: time, sessionName: "Friends",
                memberPubkeys: members.map(\.hex)), from: creator, at: time)
    }

    static func root(
        by sender: PublicKey, at time: Int64, url: String = "https://example.com/a", session: String = "S",
        rumorID: String = randomID(), wrapID: String = randomID(), rootID: String = ""
    ) -> LinkstrMessage {
        message(
            LinkstrPayload(conversationID: session, rootID: rootID, kind: .root, url: url, note: "look", timestamp: time),
            from: sender, at: time, rumorID: rumorID, wrapID: wrapID)
    }

    static func reaction(
        _ emoji: String, on rootID: String, by sender: PublicKey, at time: Int64, active: Bool = true, session: String = "S",
        rumorID: String = randomID()
    ) -> LinkstrMessage {
        message(
            LinkstrPayload(conversationID: session, rootID: rootID, kind: .reaction, timestamp: time, emoji: emoji, reactionActive: active),
            from: sender, at: time, rumorID: rumorID)
    }

    static func rootDelete(_ rootID: String, by sender: PublicKey, at time: Int64, session: String = "S") -> LinkstrMessage {
        message(LinkstrPayload(conversationID: session, rootID: rootID, kind: .rootDelete, timestamp: time), from: sender, at: time)
    }

    static func sessionDelete(by sender: PublicKey, at time: Int64, session: String = "S") -> LinkstrMessage {
        message(LinkstrPayload(conversationID: session, rootID: randomID(), kind: .sessionDelete, timestamp: time), from: sender, at: time)
    }

    static func ledger(with members: [PublicKey] = [alice, me, bob]) -> LinkstrLedger {
        var ledger = LinkstrLedger(me: me.hex)
        _ = ledger.ingest(create(members), origin: .live)
        return ledger
    }

    // MARK: Dedupe and R7

    @Test func theSameWrapTwiceIsADuplicateAndChangesNothing() {
        var ledger = Self.ledger()
        let post = Self.root(by: Self.alice, at: 200)
        #expect(ledger.ingest(post, origin: .live).outcome == .applied)
        _ = ledger.takeChanges()
        #expect(ledger.ingest(post, origin: .live).outcome == .duplicate)
        #expect(ledger.takeChanges().isEmpty)
        #expect(ledger.posts.count == 1)
    }

    @Test func r7ADuplicateRootMergesItsWrapIDsIntoTheStoredPost() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID(), first = Self.randomID(), echo = Self.randomID()
        #expect(ledger.ingest(Self.root(by: Self.me, at: 200, rumorID: rumorID, wrapID: first), origin: .local).outcome == .applied)
        _ = ledger.takeChanges()
        #expect(ledger.ingest(Self.root(by: Self.me, at: 200, rumorID: rumorID, wrapID: echo), origin: .live).outcome == .duplicate)
        #expect(ledger.posts[rumorID]?.wrapIDs == [first, echo].sorted())
        #expect(ledger.takeChanges().posts == [rumorID], "the merged wrap ids are persisted")
        #expect(ledger.posts.count == 1)
    }

    @Test func r7WrapIDsMergeWhileTheRootIsPending() {
        var ledger = LinkstrLedger(me: Self.me.hex)
        let rumorID = Self.randomID(), first = Self.randomID(), second = Self.randomID()
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID, wrapID: first), origin: .live).outcome
                == .pending("unknown session"))
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID, wrapID: second), origin: .live).outcome == .duplicate)
        #expect(ledger.pending.count == 1)
        let report = ledger.ingest(Self.create([Self.alice, Self.me]), origin: .live)
        #expect(report.applied.count == 2, "the create and the released root")
        #expect(ledger.posts[rumorID]?.wrapIDs == [first, second].sorted())
    }

    // MARK: R4, R5

    @Test func r4EarlyMessagesWaitForTheSessionAndReplayInOrder() {
        var ledger = LinkstrLedger(me: Self.me.hex)
        let rootID = Self.randomID()
        #expect(ledger.ingest(Self.reaction("👍", on: rootID, by: Self.bob, at: 210), origin: .live).outcome == .pending("unknown session"))
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rootID), origin: .live).outcome == .pending("unknown session"))
        #expect(ledger.pending.count == 2)
        let report = ledger.ingest(Self.create([Self.alice, Self.me, Self.bob]), origin: .live)
        #expect(report.outcome == .applied)
        #expect(
            report.applied.map(\.message.payload.kind) == [.sessionCreate, .root, .reaction],
            "the root replays first (older), and releases the reaction that waited for it")
        #expect(ledger.pending.count == 0)
        #expect(ledger.reactions(on: rootID).count == 1)
    }

    @Test func r5SenderAndSelfMustBeActiveWhenTheMessageWasSent() {
        var ledger = Self.ledger(with: [Self.alice, Self.me])
        _ = ledger.ingest(Self.members([Self.alice, Self.me, Self.bob], at: 300), origin: .live)
        // Bob's post from before he was added: the membership state is newer, so it is final.
        #expect(
            ledger.ingest(Self.root(by: Self.bob, at: 250), origin: .history).outcome == .ignored("sender or self is not an active member"))
        #expect(ledger.ingest(Self.root(by: Self.bob, at: 300), origin: .history).outcome == .applied, "the interval starts at its start")
        // A stranger's post is ignored once the state is newer than it.
        #expect(
            ledger.ingest(Self.root(by: Self.mallory, at: 290), origin: .live).outcome == .ignored("sender or self is not an active member")
        )
    }

    @Test func r5ALiveMessageAlsoNeedsBothActiveNow() {
        var ledger = Self.ledger()
        _ = ledger.ingest(Self.members([Self.alice, Self.me], at: 300), origin: .live)
        // Bob was a member at 200 but is not now: as history it counts, live it does not.
        #expect(
            ledger.ingest(Self.root(by: Self.bob, at: 200), origin: .live).outcome == .ignored("sender or self is not an active member"))
        #expect(ledger.ingest(Self.root(by: Self.bob, at: 201), origin: .history).outcome == .applied)
    }

    @Test func r5ALiveMessageAheadOfTheMembershipStateWaitsForTheReAdd() {
        var ledger = Self.ledger(with: [Self.alice, Self.me])
        let post = Self.root(by: Self.bob, at: 400)
        #expect(ledger.ingest(post, origin: .live).outcome == .pending("waiting for a membership change"))
        let report = ledger.ingest(Self.members([Self.alice, Self.me, Self.bob], at: 390), origin: .live)
        #expect(report.applied.map(\.message.payload.kind) == [.sessionMembers, .root], "the re-add released it")
        #expect(ledger.posts[post.rumorID.hex] != nil)
        #expect(ledger.posts[post.rumorID.hex]?.isRead == false)
    }

    @Test func r5RemovedSelfSeesNothingNew() {
        var ledger = Self.ledger()
        _ = ledger.ingest(Self.members([Self.alice, Self.bob], at: 300), origin: .live)
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 250), origin: .live).outcome == .ignored("sender or self is not an active member"))
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 310), origin: .live).outcome == .pending("waiting for a membership change"),
            "newer than the state: a re-add may still come")
        #expect(ledger.posts.isEmpty)
    }

    // MARK: R6

    @Test func r6TheRootIDIsTheRumorIDAndTheURLMustNormalise() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 200, rootID: Self.randomID()), origin: .live).outcome
                == .ignored("root_id differs from the event id"))
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID, rootID: rumorID), origin: .live).outcome == .applied,
            "a root_id equal to the event id is fine")
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 201, url: "https://EXAMPLE.com/Path"), origin: .live).outcome == .applied)
        #expect(ledger.posts.values.contains { $0.url == "https://example.com/Path" })
        #expect(ledger.posts.count == 2)
    }

    // MARK: R8

    @Test func r8ReactionsWaitForTheirRootAndTheNewestWinsPerKey() {
        var ledger = Self.ledger()
        let rootID = Self.randomID()
        #expect(
            ledger.ingest(Self.reaction("👍", on: rootID, by: Self.bob, at: 220), origin: .live).outcome
                == .pending("the post has not arrived"))
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rootID), origin: .live).applied.count == 2)
        // An older toggle loses; a newer one wins; equal time goes to the greater event id.
        #expect(
            ledger.ingest(Self.reaction("👍", on: rootID, by: Self.bob, at: 210, active: false), origin: .live).outcome
                == .ignored("older than the reaction's state"))
        #expect(
            ledger.ingest(
                Self.reaction("👍", on: rootID, by: Self.bob, at: 230, active: false, rumorID: "1" + String(repeating: "0", count: 63)),
                origin: .live
            ).outcome == .applied)
        #expect(
            ledger.ingest(
                Self.reaction("👍", on: rootID, by: Self.bob, at: 230, active: true, rumorID: "2" + String(repeating: "0", count: 63)),
                origin: .live
            ).outcome == .applied)
        #expect(
            ledger.ingest(
                Self.reaction("👍", on: rootID, by: Self.bob, at: 230, active: false, rumorID: "0" + String(repeating: "0", count: 63)),
                origin: .live
            ).outcome == .ignored("older than the reaction's state"))
        let key = Reaction.Key(sessionID: "S", rootID: rootID, emoji: "👍", sender: Self.bob.hex)
        #expect(ledger.reactions[key]?.isActive == true)
        // Keys are per emoji and per sender.
        #expect(ledger.ingest(Self.reaction("👀", on: rootID, by: Self.bob, at: 240), origin: .live).outcome == .applied)
        #expect(ledger.ingest(Self.reaction("👍", on: rootID, by: Self.me, at: 240), origin: .local).outcome == .applied)
        #expect(ledger.reactions(on: rootID).count == 3)
    }

    @Test func r8AReactionOnAPostOfAnotherSessionIsIgnored() {
        var ledger = Self.ledger()
        _ = ledger.ingest(Self.create([Self.alice, Self.me], session: "T"), origin: .live)
        let rootID = Self.randomID()
        _ = ledger.ingest(Self.root(by: Self.alice, at: 200, session: "T", rumorID: rootID), origin: .live)
        #expect(
            ledger.ingest(Self.reaction("👍", on: rootID, by: Self.bob, at: 220), origin: .live).outcome
                == .ignored("the post is in another session"))
    }

    // MARK: R9

    @Test func r9OnlyTheAuthorDeletesAndTheWatermarkStopsResurrection() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        let post = Self.root(by: Self.alice, at: 200, rumorID: rumorID)
        _ = ledger.ingest(post, origin: .live)
        _ = ledger.ingest(Self.reaction("👍", on: rumorID, by: Self.bob, at: 210), origin: .live)
        #expect(
            ledger.ingest(Self.rootDelete(rumorID, by: Self.bob, at: 220), origin: .live).outcome
                == .ignored("only the author deletes a post"))
        #expect(ledger.posts[rumorID] != nil)
        _ = ledger.takeChanges()
        #expect(ledger.ingest(Self.rootDelete(rumorID, by: Self.alice, at: 230), origin: .live).outcome == .applied)
        #expect(ledger.posts[rumorID] == nil && ledger.reactions(on: rumorID).isEmpty, "the post and its reactions are gone")
        #expect(ledger.deletions[rumorID]?.deletedBy == Self.alice.hex)
        let changes = ledger.takeChanges()
        #expect(changes.posts == [rumorID] && changes.deletions == [rumorID] && changes.reactions.count == 1)
        // The same root again through another wrap (a full re-sync) stays deleted; so do reactions.
        #expect(
            ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID), origin: .history).outcome
                == .ignored("the post was deleted"))
        #expect(
            ledger.ingest(Self.reaction("👀", on: rumorID, by: Self.bob, at: 240), origin: .live).outcome == .ignored("the post was deleted")
        )
    }

    @Test func r9ADeleteBeforeItsRootWaitsAndThenClearsTheWaitingReactions() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        #expect(
            ledger.ingest(Self.rootDelete(rumorID, by: Self.alice, at: 230), origin: .live).outcome == .pending("the post has not arrived"))
        #expect(
            ledger.ingest(Self.reaction("👍", on: rumorID, by: Self.bob, at: 210), origin: .live).outcome
                == .pending("the post has not arrived"))
        let report = ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID), origin: .history)
        #expect(report.outcome == .applied)
        #expect(ledger.posts[rumorID] == nil && ledger.deletions[rumorID] != nil && ledger.reactions(on: rumorID).isEmpty)
        #expect(ledger.pending.count == 0)
    }

    @Test func r9AMismatchedDeleteBlocksNothing() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        _ = ledger.ingest(Self.rootDelete(rumorID, by: Self.bob, at: 230), origin: .live)
        _ = ledger.ingest(Self.reaction("👍", on: rumorID, by: Self.bob, at: 210), origin: .live)
        _ = ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID), origin: .live)
        #expect(ledger.posts[rumorID] != nil && ledger.reactions(on: rumorID).count == 1, "Bob's delete of Alice's post did nothing")
        #expect(ledger.deletions.isEmpty)
    }

    @Test func r9AValidatedDeleteDropsReactionsStillWaitingForTheRoot() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        _ = ledger.ingest(Self.reaction("👍", on: rumorID, by: Self.bob, at: 250), origin: .live)
        _ = ledger.ingest(Self.reaction("👀", on: rumorID, by: Self.me, at: 260), origin: .live)
        _ = ledger.ingest(Self.rootDelete(rumorID, by: Self.alice, at: 230), origin: .live)
        #expect(ledger.pending.count == 3)
        _ = ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID), origin: .live)
        #expect(ledger.pending.count == 0 && ledger.reactions.isEmpty && ledger.posts.isEmpty)
    }

    @Test func aSnapshotArrivingLateTakesBackWhatItRulesOut() {
        var ledger = Self.ledger()
        let bobsPost = Self.root(by: Self.bob, at: 250), alicesPost = Self.root(by: Self.alice, at: 250)
        _ = ledger.ingest(bobsPost, origin: .history)
        _ = ledger.ingest(alicesPost, origin: .history)
        _ = ledger.ingest(Self.reaction("👍", on: alicesPost.rumorID.hex, by: Self.bob, at: 260), origin: .history)
        _ = ledger.ingest(Self.reaction("👍", on: bobsPost.rumorID.hex, by: Self.alice, at: 260), origin: .history)
        #expect(ledger.posts.count == 2 && ledger.reactions.count == 2)
        // Bob was removed at 240: his post and reaction from after that go back to waiting, and so
        // does Alice's reaction to his post.
        _ = ledger.takeChanges()
        _ = ledger.ingest(Self.members([Self.alice, Self.me], at: 240), origin: .history)
        #expect(Array(ledger.posts.keys) == [alicesPost.rumorID.hex] && ledger.reactions.isEmpty)
        #expect(ledger.pending.count == 3)
        let changes = ledger.takeChanges()
        #expect(changes.posts == [bobsPost.rumorID.hex] && changes.reactions.count == 2)
        // Re-added at 245: everything comes back.
        _ = ledger.ingest(Self.members([Self.alice, Self.me, Self.bob], at: 245), origin: .history)
        #expect(ledger.posts.count == 2 && ledger.reactions.count == 2 && ledger.pending.count == 0)
    }

    // MARK: R10

    @Test func r10ASessionDeletePurgesItsDataAndPendingDependents() {
        var ledger = Self.ledger()
        let rumorID = Self.randomID()
        _ = ledger.ingest(Self.root(by: Self.alice, at: 200, rumorID: rumorID), origin: .live)
        _ = ledger.ingest(Self.reaction("👍", on: rumorID, by: Self.bob, at: 210), origin: .live)
        _ = ledger.ingest(Self.reaction("👀", on: Self.randomID(), by: Self.bob, at: 210), origin: .live)
        #expect(ledger.pending.count == 1)
        #expect(
            ledger.ingest(Self.sessionDelete(by: Self.bob, at: 300), origin: .live).outcome
                == .ignored("only the creator deletes a session"))
        #expect(ledger.ingest(Self.sessionDelete(by: Self.alice, at: 300), origin: .live).outcome == .applied)
        #expect(ledger.sessions["S"] == nil && ledger.posts.isEmpty && ledger.reactions.isEmpty && ledger.pending.count == 0)
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 310), origin: .live).outcome == .ignored("the session was deleted"))
        #expect(ledger.ingest(Self.create([Self.alice, Self.me], at: 400), origin: .live).outcome == .ignored("the session was deleted"))
    }

    // MARK: R12

    @Test func r12ReadState() {
        var ledger = Self.ledger()
        let own = Self.root(by: Self.me, at: 200), restored = Self.root(by: Self.alice, at: 201)
        let live = Self.root(by: Self.alice, at: 202), later = Self.root(by: Self.alice, at: 203)
        _ = ledger.ingest(own, origin: .history)
        _ = ledger.ingest(restored, origin: .restore)
        _ = ledger.ingest(live, origin: .live)
        _ = ledger.ingest(later, origin: .history)
        #expect(ledger.posts[own.rumorID.hex]?.isRead == true, "own roots are read")
        #expect(ledger.posts[restored.rumorID.hex]?.isRead == true, "a restore into an empty store is read")
        #expect(ledger.posts[live.rumorID.hex]?.isRead == false && ledger.posts[later.rumorID.hex]?.isRead == false)
        #expect(ledger.unreadCount(in: "S") == 2)
        // Reactions never change read state.
        _ = ledger.ingest(Self.reaction("👍", on: own.rumorID.hex, by: Self.alice, at: 210), origin: .live)
        _ = ledger.ingest(Self.reaction("👍", on: live.rumorID.hex, by: Self.me, at: 210), origin: .local)
        #expect(ledger.unreadCount(in: "S") == 2 && ledger.posts[own.rumorID.hex]?.isRead == true)
        #expect(ledger.markRead([live.rumorID.hex, own.rumorID.hex]) == 1)
        #expect(ledger.unreadCount(in: "S") == 1)
    }

    // MARK: Convergence

    /// The end-to-end order guarantee: whatever order relays deliver a conversation in, the
    /// ledger ends in the same state.
    @Test(arguments: 0..<40) func outOfOrderDeliveryConvergesToTheSameState(seed: Int) {
        let rootA = Self.randomID(), rootB = Self.randomID(), rootC = Self.randomID()
        let script: [LinkstrMessage] = [
            Self.create([Self.alice, Self.me]),
            Self.members([Self.alice, Self.me, Self.bob], at: 150),
            Self.root(by: Self.alice, at: 160, rumorID: rootA),
            Self.root(by: Self.bob, at: 170, rumorID: rootB),
            Self.reaction("👍", on: rootA, by: Self.bob, at: 180),
            Self.reaction("👍", on: rootA, by: Self.bob, at: 185, active: false),
            Self.reaction("🔥", on: rootB, by: Self.alice, at: 186),
            Self.root(by: Self.alice, at: 190, rumorID: rootC),
            Self.rootDelete(rootC, by: Self.alice, at: 195),
            Self.reaction("👀", on: rootC, by: Self.bob, at: 191),
            Self.members([Self.alice, Self.me], at: 200),
            Self.root(by: Self.bob, at: 210),
        ]
        var inOrder = LinkstrLedger(me: Self.me.hex)
        for message in script { _ = inOrder.ingest(message, origin: .history) }
        var generator = SeededGenerator(seed: UInt64(seed) &+ 1)
        var shuffled = LinkstrLedger(me: Self.me.hex)
        for message in script.shuffled(using: &generator) { _ = shuffled.ingest(message, origin: .history) }
        #expect(Set(shuffled.posts.keys) == [rootA, rootB])
        #expect(shuffled.posts == inOrder.posts)
        #expect(shuffled.reactions == inOrder.reactions)
        #expect(shuffled.deletions.keys.sorted() == inOrder.deletions.keys.sorted())
        #expect(shuffled.sessions == inOrder.sessions)
        #expect(shuffled.pending.all.map(\.message.rumorID) == inOrder.pending.all.map(\.message.rumorID))
    }

    @Test func r14HistoryIsAppliedInTheOrderRulesOrderWhateverOrderItCameIn() {
        let rootID = Self.randomID()
        let newestFirst = [
            Self.reaction("👍", on: rootID, by: Self.bob, at: 300), Self.root(by: Self.alice, at: 200, rumorID: rootID),
            Self.create([Self.alice, Self.me, Self.bob]),
        ]
        var history = LinkstrLedger(me: Self.me.hex)
        let reports = history.ingest(batch: newestFirst, origin: .history)
        #expect(reports.map(\.outcome) == [.applied, .applied, .applied], "nothing had to wait: the create went first")
        #expect(reports.map { $0.applied.count } == [1, 1, 1])
        // Live messages keep their arrival order: the same batch waits and replays.
        var live = LinkstrLedger(me: Self.me.hex)
        let liveReports = live.ingest(batch: newestFirst, origin: .live)
        #expect(liveReports.map(\.outcome) == [.pending("unknown session"), .pending("unknown session"), .applied])
        #expect(live.posts == history.posts && live.reactions == history.reactions)
    }

    @Test func thePendingLimitRefusesNewMessages() {
        var ledger = LinkstrLedger(me: Self.me.hex, pendingLimit: 2)
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 1), origin: .live).outcome == .pending("unknown session"))
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 2), origin: .live).outcome == .pending("unknown session"))
        #expect(ledger.ingest(Self.root(by: Self.alice, at: 3), origin: .live).outcome == .ignored("too many pending messages"))
        #expect(ledger.pending.count == 2)
    }
}
