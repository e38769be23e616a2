import Foundation
import LinkstrCore
import LinkstrWire
import NostrProtocol
import Testing

/// R13 (the follow list as a mirror with a watermark), aliases and display names, and which
/// messages notify, including the resolver a notification extension calls.
@Suite struct ContactsAndNotificationsTests {
    static let me = Keys.generate(), alice = Keys.generate(), bob = Keys.generate()

    static func followList(_ keys: [Keys], at time: Int64, by author: Keys = me) -> NostrEvent {
        FollowList.make(keys: author, entries: keys.map { FollowList.Entry(pubkey: $0.publicKey) }, createdAt: time)
    }

    @Test func r13NewerFollowListsWinAndTheWatermarkSurvivesEncoding() throws {
        var book = ContactBook()
        let first100 = book.apply(followList: Self.followList([Self.alice], at: 100))
        #expect(first100)
        #expect(book.follows == [Self.alice.publicKey.hex])
        let older = book.apply(followList: Self.followList([Self.bob], at: 90))
        #expect(!older, "older loses")
        #expect(book.follows == [Self.alice.publicKey.hex])
        // Equal time: the greater event id wins (the order rule), whichever arrives first.
        let first = Self.followList([Self.bob], at: 200), second = Self.followList([Self.alice, Self.bob], at: 200)
        let (low, high) = first.id.hex < second.id.hex ? (first, second) : (second, first)
        let highApplied = book.apply(followList: high)
        let lowApplied = book.apply(followList: low)
        #expect(highApplied && !lowApplied)
        #expect(book.follows == FollowList.entries(high).map(\.pubkey.hex))
        // The watermark is part of what is persisted: a restart cannot roll back.
        let restored = try JSONDecoder().decode(ContactBook.self, from: JSONEncoder().encode(book))
        var copy = restored
        let rolledBack = copy.apply(followList: Self.followList([], at: 150))
        #expect(!rolledBack)
        #expect(restored == book)
        // Our next list is dated after the watermark.
        #expect(book.nextCreatedAt(now: 10) == 201)
    }

    @Test func addingAndRemovingAreFullReplacementsWithDuplicatesBlocked() throws {
        var book = ContactBook()
        book.apply(followList: Self.followList([Self.alice], at: 100))
        #expect(throws: ContactBook.ContactError.duplicate) { try book.adding(Self.alice.publicKey.npub, me: Self.me.publicKey.hex) }
        #expect(throws: ContactBook.ContactError.isSelf) { try book.adding(Self.me.publicKey.hex, me: Self.me.publicKey.hex) }
        #expect(throws: ContactBook.ContactError.invalidKey) { try book.adding("npub1garbage", me: Self.me.publicKey.hex) }
        #expect(try book.adding(Self.bob.publicKey.npub, me: Self.me.publicKey.hex) == [Self.alice.publicKey.hex, Self.bob.publicKey.hex])
        #expect(try book.removing(Self.alice.publicKey.hex) == [])
        #expect(throws: ContactBook.ContactError.unknown) { try book.removing(Self.bob.publicKey.hex) }
        #expect(book.follows == [Self.alice.publicKey.hex], "nothing changes until the signed list is applied")
    }

    @Test func displayNamesFallBackFromAliasToProfileNameToNpub() {
        var book = ContactBook()
        let key = Self.alice.publicKey.hex
        #expect(book.displayName(for: key) == Self.alice.publicKey.npub)
        #expect(book.displayName(for: key, profileName: "alice") == "alice")
        book.setAlias("  Ally ", for: key)
        #expect(book.displayName(for: key, profileName: "alice") == "Ally")
        book.setAlias("   ", for: key)
        #expect(book.aliases[key] == nil)
    }

    static func wrap(_ payload: LinkstrPayload, from sender: Keys, to recipient: Keys) throws -> NostrEvent {
        try #require(
            try LinkstrRumor.wraps(payload, from: sender, to: [recipient.publicKey]).wraps.first {
                $0.firstTagValue("p") == recipient.publicKey.hex
            })
    }

    @Test func onlyInboundLiveRootsAndActiveReactionsNotify() throws {
        let root = LinkstrPayload(conversationID: "S", kind: .root, url: "https://a.example")
        let on = LinkstrPayload(conversationID: "S", rootID: "r", kind: .reaction, emoji: "👍", reactionActive: true)
        let off = LinkstrPayload(conversationID: "S", rootID: "r", kind: .reaction, emoji: "👍", reactionActive: false)
        let snapshot = LinkstrPayload(
            conversationID: "S", rootID: "op", kind: .sessionMembers, sessionName: "N", memberPubkeys: [Self.me.publicKey.hex])
        func applied(_ payload: LinkstrPayload, from sender: Keys, _ origin: IngestOrigin) throws -> LinkstrLedger.Applied {
            LinkstrLedger.Applied(
                message: try LinkstrMessage.open(try Self.wrap(payload, from: sender, to: Self.me), keys: Self.me), origin: origin)
        }
        let me = Self.me.publicKey.hex
        #expect(NotificationDecision.notifies(try applied(root, from: Self.alice, .live), me: me, archived: []))
        #expect(NotificationDecision.notifies(try applied(on, from: Self.alice, .live), me: me, archived: []))
        #expect(!NotificationDecision.notifies(try applied(off, from: Self.alice, .live), me: me, archived: []), "deactivations never")
        #expect(!NotificationDecision.notifies(try applied(snapshot, from: Self.alice, .live), me: me, archived: []))
        #expect(!NotificationDecision.notifies(try applied(root, from: Self.alice, .history), me: me, archived: []), "history never")
        #expect(!NotificationDecision.notifies(try applied(root, from: Self.alice, .restore), me: me, archived: []))
        #expect(!NotificationDecision.notifies(try applied(root, from: Self.me, .live), me: me, archived: []), "self echoes never")
        #expect(
            !NotificationDecision.notifies(try applied(root, from: Self.alice, .live), me: me, archived: ["S"]), "archived sessions never")
    }

    @Test func theResolverGivesTheExtensionItsText() throws {
        let resolver = NotificationResolver(
            keys: Self.me, sessionName: { $0 == "S" ? "Clips" : nil },
            displayName: { $0 == Self.alice.publicKey.hex ? "Alice" : nil }, isArchived: { $0 == "ARCHIVED" })
        let root = try Self.wrap(
            LinkstrPayload(conversationID: "S", kind: .root, url: "https://a.example", note: "look"), from: Self.alice, to: Self.me)
        #expect(resolver.resolve(root) == NotificationContent(title: "Clips", body: "Alice shared a link — look", sessionID: "S"))
        let reaction = try Self.wrap(
            LinkstrPayload(conversationID: "S", rootID: "r", kind: .reaction, emoji: "🔥", reactionActive: true),
            from: Self.bob, to: Self.me)
        #expect(
            resolver.resolve(reaction) == NotificationContent(title: "Clips", body: "\(Self.bob.publicKey.npub) reacted 🔥", sessionID: "S"))
        let archived = try Self.wrap(
            LinkstrPayload(conversationID: "ARCHIVED", kind: .root, url: "https://a.example"), from: Self.alice, to: Self.me)
        #expect(resolver.resolve(archived) == nil)
        let notForMe = try Self.wrap(
            LinkstrPayload(conversationID: "S", kind: .root, url: "https://a.example"), from: Self.alice, to: Self.bob)
        #expect(resolver.resolve(notForMe) == nil, "a wrap to someone else does not open")
    }
}
