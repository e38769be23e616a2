/// A bounded, thread-safe cache of conversation keys per (own key, peer key).
///
/// Unwrapping a gift wrap costs two ECDH operations; the seal layer's peer is the message author,
/// who repeats, so caching that key removes one ECDH per message after the first. Wrap keys are
/// fresh per message and are deliberately not cached (see `GiftWrap.unwrap`).
public final class ConversationKeyCache: Sendable {
    private struct Pair: Hashable {
        let own: [UInt8]
        let peer: [UInt8]
    }

    private let capacity: Int
    private let entries = Locked<[Pair: ConversationKey]>([:])

    public init(capacity: Int = 4096) {
        self.capacity = max(capacity, 1)
    }

    /// The key for `keys` and `peer`, derived once and then served from memory.
    public func conversationKey(_ keys: Keys, peer: PublicKey) -> ConversationKey {
        let pair = Pair(own: keys.publicKey.bytes, peer: peer.bytes)
        if let cached = entries.withLock({ $0[pair] }) { return cached }
        let derived = ConversationKey(secretKey: keys.secretKey, publicKey: peer)
        entries.withLock { entries in
            // Simple bound: drop everything when full. Keys are cheap to re-derive and the
            // working set (a user's contacts) is far below the capacity.
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[pair] = derived
        }
        return derived
    }

    public var count: Int { entries.withLock { $0.count } }
}
