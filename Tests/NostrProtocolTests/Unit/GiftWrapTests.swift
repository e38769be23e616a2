import Foundation
import NostrProtocol
import Testing

@Suite struct GiftWrapTests {
    let alice = Keys.generate()
    let bob = Keys.generate()

    func rumor(from keys: Keys, content: String = "hi", tags: [[String]] = []) -> UnsignedEvent {
        UnsignedEvent(pubkey: keys.publicKey, kind: 44001, tags: tags, content: content)
    }

    @Test func roundTrip() throws {
        let original = rumor(from: alice, content: #"{"kind":"root","url":"https://example.com/a"}"#)
        let wrap = try GiftWrap.make(original, author: alice, recipient: bob.publicKey)
        #expect(wrap.kind == 1059)
        #expect(wrap.tags == [["p", bob.publicKey.hex]])
        #expect(wrap.pubkey != alice.publicKey, "wraps are signed by a one-time key")
        let opened = try GiftWrap.unwrap(wrap, keys: bob)
        #expect(opened.rumor == original)
        #expect(opened.sender == alice.publicKey)
        #expect(opened.seal.kind == 13 && opened.seal.tags.isEmpty)
    }

    @Test func freshKeyAndPastTimestampsPerWrap() throws {
        let now = UnixTime.now()
        let first = try GiftWrap.make(rumor(from: alice), author: alice, recipient: bob.publicKey)
        let second = try GiftWrap.make(rumor(from: alice), author: alice, recipient: bob.publicKey)
        #expect(first.pubkey != second.pubkey)
        for wrap in [first, second] {
            let seal = try GiftWrap.unwrap(wrap, keys: bob).seal
            for timestamp in [wrap.createdAt, seal.createdAt] {
                #expect(timestamp <= now + 1 && timestamp >= now - GiftWrap.timestampJitter - 1)
            }
        }
        let spread = (0..<200).map { _ in GiftWrap.randomizedTimestamp(now: 1_000_000) }
        #expect(spread.allSatisfy { (1_000_000 - 172_800)...1_000_000 ~= $0 })
        #expect(Set(spread).count > 150, "timestamps are randomised, not constant")
    }

    @Test func cacheServesSealKeys() throws {
        let cache = ConversationKeyCache()
        for _ in 0..<3 {
            let wrap = try GiftWrap.make(rumor(from: alice), author: alice, recipient: bob.publicKey)
            #expect(try GiftWrap.unwrap(wrap, keys: bob, cache: cache).sender == alice.publicKey)
        }
        #expect(cache.count == 1, "only the author's seal key is cached, never one-time wrap keys")
    }

    @Test func wrongRecipientFailsAtTheMAC() throws {
        let wrap = try GiftWrap.make(rumor(from: alice), author: alice, recipient: bob.publicKey)
        #expect(throws: GiftWrapError.wrapDecryption(.invalidMAC)) { try GiftWrap.unwrap(wrap, keys: Keys.generate()) }
    }

    @Test func rejectsNonWrapKinds() throws {
        let note = alice.sign(kind: 1, content: "x")
        #expect(throws: GiftWrapError.notAGiftWrap(kind: 1)) { try GiftWrap.unwrap(note, keys: bob) }
    }

    @Test func rejectsTamperedWrap() throws {
        let wrap = try GiftWrap.make(rumor(from: alice), author: alice, recipient: bob.publicKey)
        let tampered = NostrEvent(
            id: wrap.id, pubkey: wrap.pubkey, createdAt: wrap.createdAt + 1, kind: wrap.kind,
            tags: wrap.tags, content: wrap.content, sig: wrap.sig)
        #expect(throws: GiftWrapError.invalidWrap(.idMismatch)) { try GiftWrap.unwrap(tampered, keys: bob) }
        let resigned = NostrEvent(
            id: wrap.id, pubkey: wrap.pubkey, createdAt: wrap.createdAt, kind: wrap.kind,
            tags: wrap.tags, content: wrap.content, sig: alice.sign(wrap.id.bytes))
        #expect(throws: GiftWrapError.invalidWrap(.invalidSignature)) { try GiftWrap.unwrap(resigned, keys: bob) }
    }

    /// Wraps a hand-made seal so each seal/rumor rule can be broken on its own.
    func wrapRaw(sealJSON: String, to recipient: PublicKey) throws -> NostrEvent {
        let ephemeral = Keys.generate()
        let content = try NIP44.encrypt(sealJSON, secretKey: ephemeral.secretKey, publicKey: recipient)
        return ephemeral.sign(kind: 1059, tags: [["p", recipient.hex]], content: content)
    }

    func sealRaw(rumorJSON: String, author: Keys, to recipient: PublicKey, kind: UInt16 = 13, tags: [[String]] = []) throws -> NostrEvent {
        let content = try NIP44.encrypt(rumorJSON, secretKey: author.secretKey, publicKey: recipient)
        return author.sign(kind: kind, tags: tags, content: content)
    }

    @Test func rejectsSealWithTags() throws {
        let seal = try sealRaw(rumorJSON: rumor(from: alice).json, author: alice, to: bob.publicKey, tags: [["p", bob.publicKey.hex]])
        #expect(throws: GiftWrapError.sealHasTags) { try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob) }
    }

    @Test func rejectsSealOfWrongKind() throws {
        let seal = try sealRaw(rumorJSON: rumor(from: alice).json, author: alice, to: bob.publicKey, kind: 14)
        #expect(throws: GiftWrapError.sealWrongKind(14)) {
            try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob)
        }
    }

    @Test func rejectsTamperedSeal() throws {
        let seal = try sealRaw(rumorJSON: rumor(from: alice).json, author: alice, to: bob.publicKey)
        let forged = seal.json.replacingOccurrences(of: "\"created_at\":\(seal.createdAt)", with: "\"created_at\":\(seal.createdAt - 1)")
        #expect(throws: GiftWrapError.invalidSeal(.idMismatch)) {
            try GiftWrap.unwrap(try wrapRaw(sealJSON: forged, to: bob.publicKey), keys: bob)
        }
    }

    @Test func rejectsMalformedSealJSON() throws {
        let wrap = try wrapRaw(sealJSON: "not json", to: bob.publicKey)
        #expect {
            try GiftWrap.unwrap(wrap, keys: bob)
        } throws: { error in
            if case .malformedSeal = error as? GiftWrapError { true } else { false }
        }
    }

    @Test func rejectsSignedRumor() throws {
        let signed = alice.sign(kind: 44001, content: "signed")
        let seal = try sealRaw(rumorJSON: signed.json, author: alice, to: bob.publicKey)
        #expect(throws: GiftWrapError.rumorSigned) { try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob) }
    }

    @Test func rejectsImpersonatedSeal() throws {
        // Mallory seals a rumor that claims Alice as its author.
        let mallory = Keys.generate()
        let seal = try sealRaw(rumorJSON: rumor(from: alice).json, author: mallory, to: bob.publicKey)
        #expect(throws: GiftWrapError.senderMismatch) {
            try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob)
        }
        // And the builder refuses to make one.
        #expect(throws: GiftWrapError.authorMismatch) { try GiftWrap.seal(rumor(from: alice), author: mallory, recipient: bob.publicKey) }
    }

    @Test func rejectsRumorWithWrongID() throws {
        let real = rumor(from: alice, content: "original")
        let lying = real.json.replacingOccurrences(of: "\"content\":\"original\"", with: "\"content\":\"changed\"")
        let seal = try sealRaw(rumorJSON: lying, author: alice, to: bob.publicKey)
        #expect(throws: GiftWrapError.rumorIDMismatch) {
            try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob)
        }
    }

    @Test func rejectsSealEncryptedToSomeoneElse() throws {
        let seal = try sealRaw(rumorJSON: rumor(from: alice).json, author: alice, to: Keys.generate().publicKey)
        #expect(throws: GiftWrapError.sealDecryption(.invalidMAC)) {
            try GiftWrap.unwrap(try wrapRaw(sealJSON: seal.json, to: bob.publicKey), keys: bob)
        }
    }

    @Test(.enabled(if: Vectors.available)) func rustNostrWraps() throws {
        let file = try Vectors.json("nip59-giftwraps-rust-nostr.json")
        for vector in file["cases"]!.array {
            let name = vector["description"]!.string
            let keys = Keys(secretKey: try SecretKey(hex: vector["unwrap_with_secret_key"]!.string))
            let wrap = try NostrEvent(jsonValue: vector["gift_wrap"]!)
            let wrapKey = ConversationKey(secretKey: keys.secretKey, publicKey: wrap.pubkey)
            #expect(Hex.encode(wrapKey.exportBytes()) == vector["wrap_conversation_key"]!.string, "\(name)")
            let opened = try GiftWrap.unwrap(wrap, keys: keys)
            #expect(opened.seal == (try NostrEvent(jsonValue: vector["expected_seal"]!)), "\(name)")
            #expect(opened.seal.json == vector["seal_plaintext_json"]!.string, "\(name)")
            #expect(opened.rumor == (try UnsignedEvent(jsonValue: vector["expected_rumor"]!)), "\(name)")
            #expect(opened.rumor.json == vector["rumor_plaintext_json"]!.string, "\(name)")
            let sealKey = ConversationKey(secretKey: keys.secretKey, publicKey: opened.seal.pubkey)
            #expect(Hex.encode(sealKey.exportBytes()) == vector["seal_conversation_key"]!.string, "\(name)")
        }
        let invalid = file["invalid_cases"]!.array
        #expect(invalid.count == 2)
        let keysForTamper = Keys(secretKey: try SecretKey(hex: invalid[0]["unwrap_with_secret_key"]!.string))
        #expect(throws: GiftWrapError.invalidWrap(.idMismatch)) {
            try GiftWrap.unwrap(try NostrEvent(jsonValue: invalid[0]["gift_wrap"]!), keys: keysForTamper)
        }
        let wrongKeys = Keys(secretKey: try SecretKey(hex: invalid[1]["unwrap_with_secret_key"]!.string))
        #expect(throws: GiftWrapError.wrapDecryption(.invalidMAC)) {
            try GiftWrap.unwrap(try NostrEvent(jsonValue: invalid[1]["gift_wrap"]!), keys: wrongKeys)
        }
    }

    @Test(.enabled(if: Vectors.available)) func specExamples() throws {
        let file = try Vectors.json("nip59-nip17-spec-examples.json")
        let nip59 = file["nip59"]!
        let recipient = Keys(secretKey: try SecretKey(hex: nip59["recipient_secret_key"]!.string))
        let opened = try GiftWrap.unwrap(try NostrEvent(jsonValue: nip59["gift_wrap"]!), keys: recipient)
        #expect(opened.rumor == (try UnsignedEvent(jsonValue: nip59["expected_rumor"]!)))
        #expect(opened.sender.hex == nip59["author_pubkey"]!.string)

        let nip17 = file["nip17"]!
        for vector in nip17["wraps"]!.array {
            let keys = Keys(secretKey: try SecretKey(hex: vector["unwrap_with_secret_key"]!.string))
            let opened = try GiftWrap.unwrap(try NostrEvent(jsonValue: vector["gift_wrap"]!), keys: keys)
            #expect(opened.rumor == (try UnsignedEvent(jsonValue: vector["expected_rumor"]!)))
            #expect(opened.sender.hex == nip17["sender_pubkey"]!.string)
        }
        #expect(try SecretKey(nsec: nip17["sender_nsec"]!.string).exportHex() == nip17["sender_secret_key"]!.string)
    }
}
