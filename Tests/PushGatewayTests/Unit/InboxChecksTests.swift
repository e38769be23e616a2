import Foundation
import NostrProtocol
import PushGateway
import Testing

/// The inbox relay's judgement of EVENTs and REQs, as values.
struct InboxChecksTests {
    static let relay = try! RelayURL("wss://push.example.com/relay")
    static let bob = Keys.generate()
    static let sender = Keys.generate()

    static func wrap(to recipient: String, createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        sender.sign(kind: EventKind.giftWrap, tags: [["p", recipient]], content: "x", createdAt: createdAt)
    }

    @Test func aWellFormedWrapIsForItsRecipient() {
        let wrap = Self.wrap(to: Self.bob.publicKey.hex)
        #expect(InboxEventCheck.judge(wrap, size: 500, relayURL: Self.relay) == .wrap(recipient: Self.bob.publicKey.hex))
    }

    @Test func everyOtherEventIsRefusedWithAPrefix() throws {
        let now = UnixTime.now()
        let bob = Self.bob.publicKey.hex
        var forged = Self.wrap(to: bob)
        forged = try NostrEvent(json: forged.json.replacingOccurrences(of: #""content":"x""#, with: #""content":"y""#))
        let cases: [(NostrEvent, Int, String)] = [
            (Self.wrap(to: bob), InboxRelaySettings.maxEventBytes + 1, "invalid: events are at most"),
            (Self.sender.sign(kind: 1, tags: [["p", bob]], content: "hi"), 100, "restricted: this inbox accepts only gift wraps"),
            (
                Self.sender.sign(kind: EventKind.giftWrap, tags: [["p", bob], ["p", bob]], content: "x"), 100,
                "invalid: a gift wrap names"
            ),
            (Self.sender.sign(kind: EventKind.giftWrap, tags: [["p", "not-a-key"]], content: "x"), 100, "invalid: a gift wrap names"),
            // Keys are stored lowercase: an uppercase recipient could match no device.
            (Self.sender.sign(kind: EventKind.giftWrap, tags: [["p", bob.uppercased()]], content: "x"), 100, "invalid: a gift wrap names"),
            (Self.wrap(to: bob, createdAt: now - InboxRelaySettings.maxAgeSeconds - 10), 100, "invalid: created_at is more than 3 days"),
            (Self.wrap(to: bob, createdAt: now + InboxRelaySettings.maxFutureSeconds + 10), 100, "invalid: created_at is more than 15"),
            (forged, 100, "invalid: bad event id or signature"),
        ]
        for (event, size, prefix) in cases {
            guard case .refuse(let reason) = InboxEventCheck.judge(event, size: size, relayURL: Self.relay, now: now) else {
                Issue.record("accepted: \(event.json)")
                continue
            }
            #expect(reason.hasPrefix(prefix), "\(reason)")
        }
    }

    @Test func aRequestToVanishMustNameThisRelayOrAll() {
        let mine = Self.bob.sign(kind: EventKind.requestToVanish, tags: [["relay", "WSS://Push.Example.com:443/relay"]], content: "")
        let all = Self.bob.sign(kind: EventKind.requestToVanish, tags: [["relay", "ALL_RELAYS"]], content: "")
        let other = Self.bob.sign(kind: EventKind.requestToVanish, tags: [["relay", "wss://other.example"]], content: "")
        let bob = Self.bob.publicKey.hex
        // Up to the request's own time: replayed later, it deletes nothing stored since.
        #expect(InboxEventCheck.judge(mine, size: 100, relayURL: Self.relay) == .vanish(pubkey: bob, until: mine.createdAt))
        #expect(InboxEventCheck.judge(all, size: 100, relayURL: Self.relay) == .vanish(pubkey: bob, until: all.createdAt))
        guard case .refuse = InboxEventCheck.judge(other, size: 100, relayURL: Self.relay) else {
            Issue.record("a request naming another relay was taken")
            return
        }
    }

    @Test func aREQIsServedOnlyForTheAuthenticatedRecipientsWraps() throws {
        let bob = Self.bob.publicKey.hex, carol = Self.sender.publicKey.hex
        let own = Filter(kinds: [EventKind.giftWrap], tags: ["p": [bob]], since: 10, until: 20, limit: 5000)
        guard case .success(let query) = InboxQuery.parse([own], authenticated: bob) else {
            Issue.record("refused its own wraps")
            return
        }
        #expect(query.recipient == bob && query.parts == [.init(ids: nil, since: 10, until: 20, limit: InboxRelaySettings.maxLimit)])
        #expect(query.matches(id: "a", recipient: bob, createdAt: 15))
        #expect(!query.matches(id: "a", recipient: bob, createdAt: 25))
        #expect(!query.matches(id: "a", recipient: carol, createdAt: 15))
        let refusals: [([Filter], String?, String)] = [
            ([own], nil, "auth-required:"),
            ([Filter(kinds: [EventKind.giftWrap], tags: ["p": [bob]])], carol, "restricted:"),
            ([Filter(kinds: [EventKind.giftWrap, 1], tags: ["p": [bob]])], bob, "restricted:"),
            ([Filter(kinds: [EventKind.giftWrap])], bob, "restricted:"),
            ([Filter(authors: [Self.sender.publicKey], kinds: [EventKind.giftWrap], tags: ["p": [bob]])], bob, "restricted:"),
            ([], bob, "invalid:"),
        ]
        for (filters, authenticated, prefix) in refusals {
            guard case .failure(let refusal) = InboxQuery.parse(filters, authenticated: authenticated) else {
                Issue.record("served \(filters) to \(authenticated ?? "nobody")")
                continue
            }
            #expect(refusal.message.hasPrefix(prefix), "\(refusal.message)")
        }
    }

    @Test func theRelayIsNamedAfterPublicURL() {
        #expect(InboxRelaySettings.relayURL(publicURL: "https://push.example.com")?.description == "wss://push.example.com/relay")
        #expect(InboxRelaySettings.relayURL(publicURL: "http://127.0.0.1:8788/")?.description == "ws://127.0.0.1:8788/relay")
    }
}
