/// NIP-59 gift wraps: rumor (unsigned) → seal (kind 13, signed by the author, no tags) →
/// wrap (kind 1059, signed by a one-time key, `p` tag for routing).
public enum GiftWrap {
    public static let sealKind: UInt16 = 13
    public static let wrapKind: UInt16 = 1059
    /// Seal and wrap timestamps are pushed up to two days into the past to blur timing.
    public static let timestampJitter: Int64 = 172_800

    /// The recipient a wrap names: the value of its one `p` tag, or nil unless it has exactly one.
    ///
    /// A NIP-59 wrap is addressed to one recipient. A wrap with several `p` tags would let one
    /// event alert every pubkey it lists (a push to each for the price of one signature), so a
    /// watcher ignores it, as it ignores one with none.
    public static func soleRecipient(of wrap: NostrEvent) -> String? {
        var recipient: String?
        for tag in wrap.tags where tag.first == "p" {
            guard recipient == nil, tag.count > 1 else { return nil }
            recipient = tag[1]
        }
        return recipient
    }

    /// A `created_at` in [now − 2 days, now]: only into the past, since relays may refuse the future.
    public static func randomizedTimestamp(now: Int64 = UnixTime.now()) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return now - Int64.random(in: 0...timestampJitter, using: &generator)
    }

    /// Seals `rumor` from `author` to `recipient`.
    public static func seal(
        _ rumor: UnsignedEvent, author: Keys, recipient: PublicKey, createdAt: Int64? = nil
    ) throws(GiftWrapError) -> NostrEvent {
        guard rumor.pubkey == author.publicKey else { throw .authorMismatch }
        let content: String
        do {
            content = try NIP44.encrypt(rumor.json, conversationKey: ConversationKey(secretKey: author.secretKey, publicKey: recipient))
        } catch {
            throw .payloadTooLarge
        }
        return author.sign(kind: sealKind, tags: [], content: content, createdAt: createdAt ?? randomizedTimestamp())
    }

    /// Wraps a seal for `recipient` under a fresh one-time key. `extraTags` follow the `p` tag.
    public static func wrap(
        seal: NostrEvent, recipient: PublicKey, ephemeralKeys: Keys = .generate(), createdAt: Int64? = nil, extraTags: [[String]] = []
    ) throws(GiftWrapError) -> NostrEvent {
        let content: String
        do {
            content = try NIP44.encrypt(
                seal.json, conversationKey: ConversationKey(secretKey: ephemeralKeys.secretKey, publicKey: recipient))
        } catch {
            throw .payloadTooLarge
        }
        return ephemeralKeys.sign(
            kind: wrapKind, tags: [["p", recipient.hex]] + extraTags, content: content,
            createdAt: createdAt ?? randomizedTimestamp())
    }

    /// Rumor → seal → wrap in one step, with independent random timestamps for seal and wrap.
    public static func make(_ rumor: UnsignedEvent, author: Keys, recipient: PublicKey) throws(GiftWrapError) -> NostrEvent {
        try wrap(seal: seal(rumor, author: author, recipient: recipient), recipient: recipient)
    }

    /// Opens a gift wrap addressed to `keys`, strictly: the wrap's id and signature, then the
    /// seal's kind, empty tags, id and signature, then an unsigned rumor with a correct id whose
    /// author is the seal's signer. `cache` (optional) keeps seal-layer conversation keys.
    public static func unwrap(_ wrap: NostrEvent, keys: Keys, cache: ConversationKeyCache? = nil) throws(GiftWrapError) -> UnwrappedGift {
        guard wrap.kind == wrapKind || wrap.kind == 21059 else { throw .notAGiftWrap(kind: wrap.kind) }
        do { try wrap.verify() } catch { throw .invalidWrap(error) }

        // The wrap key is single-use: caching it would only fill the cache.
        let sealJSON: String
        do {
            sealJSON = try NIP44.decrypt(wrap.content, conversationKey: ConversationKey(secretKey: keys.secretKey, publicKey: wrap.pubkey))
        } catch {
            throw .wrapDecryption(error)
        }
        let seal: NostrEvent
        do { seal = try NostrEvent(json: sealJSON) } catch { throw .malformedSeal(error) }
        guard seal.kind == sealKind else { throw .sealWrongKind(seal.kind) }
        guard seal.tags.isEmpty else { throw .sealHasTags }
        do { try seal.verify() } catch { throw .invalidSeal(error) }

        let sealKey = cache?.conversationKey(keys, peer: seal.pubkey) ?? ConversationKey(secretKey: keys.secretKey, publicKey: seal.pubkey)
        let rumorJSON: String
        do { rumorJSON = try NIP44.decrypt(seal.content, conversationKey: sealKey) } catch { throw .sealDecryption(error) }
        let rumor: UnsignedEvent
        do {
            rumor = try UnsignedEvent(json: rumorJSON)
        } catch .unexpectedSignature {
            throw .rumorSigned
        } catch {
            throw .malformedRumor(error)
        }
        guard rumor.pubkey == seal.pubkey else { throw .senderMismatch }
        guard rumor.computedID == rumor.id else { throw .rumorIDMismatch }
        return UnwrappedGift(wrap: wrap, seal: seal, rumor: rumor)
    }
}

/// The three layers of an opened gift wrap.
public struct UnwrappedGift: Sendable, Hashable {
    public let wrap: NostrEvent
    public let seal: NostrEvent
    public let rumor: UnsignedEvent
    /// The authenticated author: the seal's signer (equal to the rumor's pubkey).
    public var sender: PublicKey { seal.pubkey }
}
