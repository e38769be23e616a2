import NostrProtocol
import Testing

/// One signature check per event id, however many relays deliver it.
@Suite struct VerifiedEventCacheTests {
    static func event(_ content: String = "x", keys: Keys = .generate()) -> NostrEvent {
        UnsignedEvent(
            pubkey: keys.publicKey, createdAt: 1_700_000_000, kind: 1059, tags: [["p", Keys.generate().publicKey.hex]], content: content
        )
        .signed(by: keys)
    }

    /// `event` with another signature (a valid one by the same key over another id).
    static func withSignature(of other: NostrEvent, _ event: NostrEvent) -> NostrEvent {
        NostrEvent(
            id: event.id, pubkey: event.pubkey, createdAt: event.createdAt, kind: event.kind, tags: event.tags, content: event.content,
            sig: other.sig)
    }

    @Test func anEventIsCheckedOnceAndItsCopiesAreRecognised() {
        let cache = VerifiedEventCache()
        let event = Self.event()
        #expect(cache.check(event) == .verified)
        #expect(cache.check(event) == .alreadyVerified)
        #expect(cache.count == 1)
    }

    @Test func aBadSignatureIsRejectedEveryTimeAndNeverRemembered() {
        let cache = VerifiedEventCache()
        let keys = Keys.generate()
        let forged = Self.withSignature(of: Self.event("other", keys: keys), Self.event("genuine", keys: keys))
        #expect(cache.check(forged) == .invalid(.invalidSignature))
        #expect(cache.check(forged) == .invalid(.invalidSignature))
        #expect(cache.count == 0)
    }

    @Test func alteredFieldsAreRejectedEvenForAVerifiedID() {
        let cache = VerifiedEventCache()
        let event = Self.event("genuine")
        #expect(cache.check(event) == .verified)
        // The verified id on other content: the recomputed id gives it away before the cache is asked.
        let altered = NostrEvent(
            id: event.id, pubkey: event.pubkey, createdAt: event.createdAt, kind: event.kind, tags: event.tags,
            content: "altered", sig: event.sig)
        #expect(cache.check(altered) == .invalid(.idMismatch))
        let otherAuthor = NostrEvent(
            id: event.id, pubkey: Keys.generate().publicKey, createdAt: event.createdAt, kind: event.kind,
            tags: event.tags, content: event.content, sig: event.sig)
        #expect(cache.check(otherAuthor) == .invalid(.idMismatch))
    }

    /// A copy of a verified event whose own signature is damaged carries exactly the signed
    /// content (its fields hash to the verified id), so it is the same event.
    @Test func aCopyOfAVerifiedEventIsTheSameEventWhateverItsSignature() {
        let cache = VerifiedEventCache()
        let keys = Keys.generate()
        let event = Self.event("genuine", keys: keys)
        #expect(cache.check(event) == .verified)
        #expect(cache.check(Self.withSignature(of: Self.event("other", keys: keys), event)) == .alreadyVerified)
    }

    @Test func theOldestIDsGoFirstWhenFull() {
        let cache = VerifiedEventCache(capacity: 2)
        let (first, second, third) = (Self.event("1"), Self.event("2"), Self.event("3"))
        for event in [first, second, third] { #expect(cache.check(event) == .verified) }
        #expect(cache.count == 2)
        #expect(cache.check(third) == .alreadyVerified)
        #expect(cache.check(second) == .alreadyVerified)
        #expect(cache.check(first) == .verified, "evicted, so checked again")
        #expect(cache.check(second) == .verified, "the ring moved on: second was the oldest left")
        #expect(cache.count == 2)
    }
}
