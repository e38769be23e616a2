import LinkstrCore
import LinkstrWire
import NostrProtocol
import Testing

/// The session rules (docs/linkstr-wire.md §3: order, intervals, R1, R2, R3, R4, R10) as a value.
@Suite struct SessionLedgerTests {
    static let me = Keys.generate().publicKey, creator = Keys.generate().publicKey, friend = Keys.generate().publicKey
    static let stranger = Keys.generate().publicKey

    static func message(
        _ kind: PayloadKind, from sender: PublicKey, at time: Int64, session: String = "S1", members: [PublicKey]? = nil,
        name: String? = nil, id: String? = nil
    ) -> LinkstrMessage {
        let payload = LinkstrPayload(
            conversationID: session, rootID: kind == .root ? "" : "OP", kind: kind, url: kind == .root ? "https://a.b" : nil,
            timestamp: time, sessionName: name, memberPubkeys: members?.map(\.hex))
        let rumorID = try! EventID(hex: id ?? Hex.encode(SecureRandom.bytes(32)))
        return LinkstrMessage(
            wrapID: try! EventID(hex: Hex.encode(SecureRandom.bytes(32))), rumorID: rumorID, sender: sender, createdAt: time,
            payload: payload)
    }

    @Test func theOrderRuleIsTimeThenTheGreaterEventID() {
        #expect(EventOrder(createdAt: 2, eventID: "00") > EventOrder(createdAt: 1, eventID: "ff"))
        #expect(EventOrder(createdAt: 1, eventID: "ab") > EventOrder(createdAt: 1, eventID: "aa"))
    }

    @Test func membershipIsHalfOpenIntervals() {
        var membership = Membership()
        membership.apply(snapshot: ["a", "b"], at: 10)
        membership.apply(snapshot: ["a"], at: 20)
        membership.apply(snapshot: ["a", "b"], at: 30)
        #expect(membership.isActive("b", at: 10) && membership.isActive("b", at: 19))
        #expect(!membership.isActive("b", at: 20) && !membership.isActive("b", at: 29), "the end is excluded")
        #expect(membership.isActive("b", at: 30) && membership.isActive("b", at: 1_000))
        #expect(!membership.isActive("b", at: 9))
        #expect(membership.active == ["a", "b"] && membership.everKnown == ["a", "b"])
        #expect(membership.intervals["b"]?.count == 2)
    }

    @Test func r1ACreateNeedsSenderAndSelfAndOnlyTheCreatorMayRedoIt() {
        var ledger = SessionLedger(me: Self.me.hex)
        #expect(
            ledger.apply(Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.creator, Self.friend], name: "N"))
                == .ignored("sender and self must be members"))
        #expect(
            ledger.apply(Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.me, Self.friend], name: "N"))
                == .ignored("sender and self must be members"))
        #expect(
            ledger.apply(Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.creator, Self.me], name: "Friends"))
                == .applied)
        #expect(ledger.sessions["S1"]?.creator == Self.creator.hex && ledger.sessions["S1"]?.name == "Friends")
        // Someone else re-creating it is not the creator (R11: members cannot use creator rights).
        #expect(
            ledger.apply(Self.message(.sessionCreate, from: Self.friend, at: 20, members: [Self.friend, Self.me], name: "Mine"))
                == .ignored("only the creator can re-create a session"))
        // The creator's older create loses to the state: it only fills in the membership history.
        let old = Self.message(.sessionCreate, from: Self.creator, at: 5, members: [Self.creator, Self.me], name: "Old")
        #expect(ledger.apply(old) == .applied)
        #expect(ledger.sessions["S1"]?.name == "Friends" && ledger.sessions["S1"]?.version.createdAt == 10)
        #expect(ledger.sessions["S1"]?.membership.isActive(Self.me.hex, at: 5) == true)
        #expect(ledger.apply(old) == .ignored("older than the session's state"), "the same snapshot again")
    }

    @Test func r2SnapshotsAreCreatorOnlyAndMonotonic() {
        var ledger = SessionLedger(me: Self.me.hex)
        _ = ledger.apply(Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.creator, Self.me], name: "N"))
        #expect(
            ledger.apply(Self.message(.sessionMembers, from: Self.friend, at: 20, members: [Self.friend, Self.me]))
                == .ignored("only the creator changes members"))
        #expect(
            ledger.apply(
                Self.message(.sessionMembers, from: Self.creator, at: 20, members: [Self.creator, Self.me, Self.friend], name: "Renamed"))
                == .applied)
        let session = try! #require(ledger.sessions["S1"])
        #expect(session.name == "Renamed")
        #expect(session.membership.isActive(Self.friend.hex, at: 20) && !session.membership.isActive(Self.friend.hex, at: 19))
        // Equal time: the greater event id wins, the smaller loses.
        let low = Self.message(
            .sessionMembers, from: Self.creator, at: 30, members: [Self.creator, Self.me], id: String(repeating: "1", count: 64))
        let high = Self.message(
            .sessionMembers, from: Self.creator, at: 30, members: [Self.creator, Self.me, Self.friend],
            id: String(repeating: "2", count: 64))
        #expect(ledger.apply(high) == .applied)
        #expect(ledger.apply(low) == .applied, "recorded in the history")
        #expect(ledger.sessions["S1"]?.membership.active.contains(Self.friend.hex) == true, "but the current members are the winner's")
        #expect(ledger.sessions["S1"]?.version.eventID == String(repeating: "2", count: 64))
    }

    @Test func r3AndR4UnknownSessions() {
        var ledger = SessionLedger(me: Self.me.hex)
        // A root for an unknown session waits.
        #expect(ledger.apply(Self.message(.root, from: Self.creator, at: 5)) == .pending("unknown session"))
        // A snapshot without a name cannot create it: it waits for the create.
        #expect(
            ledger.apply(Self.message(.sessionMembers, from: Self.creator, at: 10, members: [Self.creator, Self.me]))
                == .pending("unknown session"))
        #expect(
            ledger.apply(Self.message(.sessionMembers, from: Self.creator, at: 10, members: [Self.creator, Self.friend], name: "N"))
                == .pending("unknown session"), "self is not in it")
        #expect(
            ledger.apply(Self.message(.sessionMembers, from: Self.creator, at: 10, members: [Self.creator, Self.me], name: "N")) == .applied
        )
        #expect(ledger.sessions["S1"]?.creator == Self.creator.hex)
    }

    @Test func r10ADeleteByTheCreatorLeavesATombstoneThatIgnoresEverythingLater() {
        var ledger = SessionLedger(me: Self.me.hex)
        _ = ledger.apply(
            Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.creator, Self.me, Self.friend], name: "N"))
        #expect(ledger.apply(Self.message(.sessionDelete, from: Self.friend, at: 20)) == .ignored("only the creator deletes a session"))
        #expect(ledger.sessions["S1"] != nil)
        #expect(ledger.apply(Self.message(.sessionDelete, from: Self.creator, at: 20)) == .applied)
        #expect(ledger.sessions["S1"] == nil && ledger.tombstones["S1"]?.deletedBy == Self.creator.hex)
        // History cannot bring it back.
        #expect(
            ledger.apply(Self.message(.sessionCreate, from: Self.creator, at: 10, members: [Self.creator, Self.me], name: "N"))
                == .ignored("the session was deleted"))
        #expect(ledger.apply(Self.message(.root, from: Self.creator, at: 30)) == .ignored("the session was deleted"))
    }
}
