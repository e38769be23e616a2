import LinkstrCore
import LinkstrWire
import NostrProtocol
import TestSupport
import Testing

/// docs/linkstr-wire.md §1–2: the payload, the rumor, the fan-out and opening received wraps.
@Suite struct WireFormatTests {
    static let member = String(repeating: "ab", count: 32)

    @Test func aRootIsWrittenWithAbsentOptionalsOmittedAndTheNoteTrimmed() throws {
        let root = LinkstrPayload(
            conversationID: "C0FFEE", kind: .root, url: "https://example.com/v", note: "  look  ", timestamp: 1_700_000_000)
        #expect(
            try JSONValue(parsing: root.json) == [
                "conversation_id": "C0FFEE", "root_id": "", "kind": "root", "url": "https://example.com/v", "note": "look",
                "timestamp": 1_700_000_000,
            ])
        var blankNote = root
        blankNote.note = "   "
        #expect(try JSONValue(parsing: blankNote.json)["note"] == nil, "an empty note is omitted")
        #expect(
            try LinkstrPayload.decode(root.json)
                == LinkstrPayload(
                    conversationID: "C0FFEE", kind: .root, url: "https://example.com/v", note: "look", timestamp: 1_700_000_000))
    }

    @Test func readingIsLenientWhereTheContractSaysSo() throws {
        // Unknown keys ignored, key order free, a missing timestamp is now, member keys lowercased and deduplicated.
        let payload = try LinkstrPayload.decode(
            #"{"member_pubkeys":["\#(Self.member.uppercased())","\#(Self.member)"],"kind":"session_create","conversation_id":"S1","root_id":"OP1","session_name":"Friends","future":1}"#,
            now: 42)
        #expect(payload.timestamp == 42)
        #expect(payload.memberPubkeys == [Self.member])
        #expect(payload.sessionName == "Friends" && payload.rootID == "OP1")
    }

    @Test(arguments: [
        (#"[1]"#, PayloadError.notJSONObject),
        (#"{"conversation_id":"C","root_id":"","kind":"poll"}"#, .unknownKind("poll")),
        (#"{"conversation_id":"C","root_id":""}"#, .missing(field: "kind")),
        (#"{"conversation_id":"  ","root_id":"","kind":"root","url":"https://a.b"}"#, .blank(field: "conversation_id")),
        (#"{"conversation_id":"C","root_id":"","kind":"root","url":"ftp://a.b"}"#, .invalidURL),
        (#"{"conversation_id":"C","root_id":"","kind":"root","url":"https://"}"#, .invalidURL),
        (#"{"conversation_id":"C","root_id":"","kind":"root"}"#, .invalidURL),
        (#"{"conversation_id":"C","root_id":" ","kind":"root_delete"}"#, .blank(field: "root_id")),
        (#"{"conversation_id":"C","root_id":"","kind":"session_delete"}"#, .blank(field: "root_id")),
        (#"{"conversation_id":"C","root_id":"O","kind":"session_create","member_pubkeys":["ab"]}"#, .invalidMemberKey("ab")),
        (
            #"{"conversation_id":"C","root_id":"O","kind":"session_create","session_name":" ","member_pubkeys":[]}"#,
            .blank(field: "session_name")
        ),
        (
            #"{"conversation_id":"C","root_id":"O","kind":"session_create","session_name":"N","member_pubkeys":[]}"#,
            .missing(field: "member_pubkeys")
        ),
        (#"{"conversation_id":"C","root_id":"O","kind":"session_members"}"#, .missing(field: "member_pubkeys")),
        (#"{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":"👍"}"#, .missing(field: "reaction_active")),
        (#"{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":" ","reaction_active":true}"#, .blank(field: "emoji")),
        (#"{"conversation_id":"C","root_id":"","kind":"reaction","emoji":"👍","reaction_active":true}"#, .blank(field: "root_id")),
        (
            #"{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":"👍","reaction_active":"yes"}"#,
            .wrongType(field: "reaction_active")
        ),
        (#"{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":"soon"}"#, .wrongType(field: "timestamp")),
    ])
    func invalidPayloadsAreRefusedWithTheirReason(json: String, error: PayloadError) {
        #expect(throws: error) { try LinkstrPayload.decode(json) }
    }

    /// Found by Fuzz/ (linkstr-payload): a whole-number double beyond Int64 passed the check and
    /// trapped in `Int64(_:)`, so one message from any sender crashed the app on opening.
    @Test(arguments: ["1e19", "-1e19", "9223372036854775808", "1.7e308"])
    func aTimestampBeyondInt64IsRefusedNotATrap(timestamp: String) {
        let json = #"{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":\#(timestamp)}"#
        #expect(throws: PayloadError.wrongType(field: "timestamp")) { try LinkstrPayload.decode(json) }
    }

    @Test func aWholeTimestampWithAnExponentIsStillSeconds() throws {
        let json = #"{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":1.7e9}"#
        #expect(try LinkstrPayload.decode(json).timestamp == 1_700_000_000)
        #expect(throws: PayloadError.wrongType(field: "timestamp")) {
            try LinkstrPayload.decode(#"{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":1.5}"#)
        }
    }

    @Test func rumorsCarryTheRootTagOnlyForReactionsAndDeletes() {
        let sender = Keys.generate().publicKey
        let root = String(repeating: "c", count: 64)
        let reaction = LinkstrRumor.make(
            LinkstrPayload(conversationID: "C", rootID: root, kind: .reaction, emoji: "🔥", reactionActive: true), sender: sender)
        #expect(reaction.kind == 44001 && reaction.tags == [["e", root, "", "root"]] && reaction.pubkey == sender)
        let delete = LinkstrRumor.make(LinkstrPayload(conversationID: "C", rootID: root, kind: .rootDelete), sender: sender)
        #expect(delete.tags == [["e", root, "", "root"]])
        for kind in [PayloadKind.root, .sessionCreate, .sessionMembers, .sessionDelete] {
            #expect(LinkstrRumor.make(LinkstrPayload(conversationID: "C", rootID: "X", kind: kind), sender: sender).tags.isEmpty)
        }
    }

    @Test func fanOutFollowsTheKindAndTheSenderAlwaysGetsACopy() throws {
        let me = Keys.generate(), a = Keys.generate().publicKey, b = Keys.generate().publicKey, c = Keys.generate().publicKey
        #expect(Fanout.recipients(for: .root, me: me.publicKey, activeMembers: [me.publicKey, a, a]) == [me.publicKey, a])
        #expect(Fanout.recipients(for: .sessionCreate, me: me.publicKey, activeMembers: [], snapshot: [a, b]) == [a, b])
        #expect(
            Fanout.recipients(for: .sessionMembers, me: me.publicKey, activeMembers: [], snapshot: [b, c], previouslyActive: [a, b]) == [
                a, b, c,
            ])
        #expect(Fanout.recipients(for: .sessionDelete, me: me.publicKey, activeMembers: [], everKnown: [a, c]) == [a, c, me.publicKey])

        let payload = LinkstrPayload(conversationID: "C", kind: .root, url: "https://example.com")
        let (rumor, wraps) = try LinkstrRumor.wraps(payload, from: me, to: [a, b])
        #expect(wraps.count == 3, "one per recipient and the sender's own copy")
        #expect(wraps.map { $0.tagValues("p") } == [[a.hex], [b.hex], [me.publicKey.hex]])
        #expect(wraps.allSatisfy { $0.kind == 1059 && $0.tags.count == 1 })
        #expect(Set(wraps.map(\.pubkey)).count == 3, "a fresh key for every wrap")
        // The sender reads its own copy back.
        let own = try LinkstrMessage.open(wraps[2], keys: me)
        #expect(own.rumorID == rumor.id && own.sender == me.publicKey && own.payload == payload)
        #expect(
            try LinkstrRumor.wraps(payload, from: me, to: [me.publicKey, a]).wraps.count == 2,
            "no second copy when the sender is a recipient")
    }

    @Test func openingChecksEverythingTheContractLists() throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let payload = LinkstrPayload(conversationID: "C", kind: .root, url: "https://example.com", timestamp: 5)
        let wrap = try LinkstrRumor.wraps(payload, from: alice, to: [bob.publicKey]).wraps[0]
        let message = try LinkstrMessage.open(wrap, keys: bob)
        #expect(message.sender == alice.publicKey && message.wrapID == wrap.id && message.payload == payload)

        // Not for us: the wrap does not decrypt.
        #expect(throws: LinkstrMessage.OpenError.self) { try LinkstrMessage.open(wrap, keys: Keys.generate()) }
        // Another rumor kind (a NIP-17 DM) is not a linkstr message.
        let dm = try GiftWrap.make(
            UnsignedEvent(pubkey: alice.publicKey, kind: 14, tags: [], content: "hi"), author: alice, recipient: bob.publicKey)
        #expect(throws: LinkstrMessage.OpenError.wrongRumorKind(14)) { try LinkstrMessage.open(dm, keys: bob) }
        // A valid wrap around an invalid payload.
        let bad = try GiftWrap.make(
            UnsignedEvent(pubkey: alice.publicKey, kind: 44001, tags: [], content: #"{"conversation_id":"C","root_id":"","kind":"root"}"#),
            author: alice, recipient: bob.publicKey)
        #expect(throws: LinkstrMessage.OpenError.payload(.invalidURL)) { try LinkstrMessage.open(bad, keys: bob) }
        // A tampered wrap fails its signature check.
        let tampered = NostrEvent(
            id: wrap.id, pubkey: wrap.pubkey, createdAt: wrap.createdAt + 1, kind: wrap.kind, tags: wrap.tags,
            content: wrap.content, sig: wrap.sig)
        #expect(throws: LinkstrMessage.OpenError.self) { try LinkstrMessage.open(tampered, keys: bob) }
    }

    /// A linkstr message wrapped by rust-nostr opens here, and one wrapped here opens there.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func interopWithRustNostr() async throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let root = String(repeating: "d", count: 64)
        let payload = LinkstrPayload(
            conversationID: "C1", rootID: root, kind: .reaction, timestamp: 1_700_000_000, emoji: "👍", reactionActive: true)
        let rumor = LinkstrRumor.make(payload, sender: alice.publicKey, createdAt: 1_700_000_000)
        let wrapJSON = try #require(
            try await RustNostrPeer.call(
                "gift_wrap",
                [
                    "sender_secret_key": .string(alice.secretKey.exportHex()), "receiver_pubkey": .string(bob.publicKey.hex),
                    "rumor": .object([
                        "created_at": .integer(rumor.createdAt), "kind": .integer(44001), "tags": .tags(rumor.tags),
                        "content": .string(rumor.content),
                    ]),
                ]
            ).stringValue)
        let opened = try LinkstrMessage.open(try NostrEvent(json: wrapJSON), keys: bob)
        #expect(opened.sender == alice.publicKey && opened.payload == payload && opened.rumorID == rumor.id)

        let ours = try LinkstrRumor.wraps(payload, from: alice, to: [bob.publicKey]).wraps[0]
        let there = try await RustNostrPeer.call(
            "unwrap_gift", ["receiver_secret_key": .string(bob.secretKey.exportHex()), "wrap_json": .string(ours.json)])
        #expect(there["sender"]?.stringValue == alice.publicKey.hex)
        let rumorThere = try UnsignedEvent(json: try #require(there["rumor_json"]?.stringValue))
        #expect(try LinkstrPayload.decode(rumorThere.content) == payload)
        #expect(rumorThere.content == payload.json, "the exact payload JSON")
        #expect(rumorThere.tags == [["e", root, "", "root"]])
    }
}
