/// NIP-02 follow lists (kind 3, replaceable: each list replaces the previous one in full).
public enum FollowList {
    public struct Entry: Sendable, Hashable {
        public var pubkey: PublicKey
        public var relay: String
        public var petname: String

        public init(pubkey: PublicKey, relay: String = "", petname: String = "") {
            self.pubkey = pubkey
            self.relay = relay
            self.petname = petname
        }
    }

    /// The full list as `["p", hex, relay, petname]` tags (empty strings kept for positions, as
    /// NIP-02 writes them); duplicates after the first are dropped.
    public static func make(keys: Keys, entries: [Entry], createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        var seen = Set<PublicKey>()
        let tags = entries.filter { seen.insert($0.pubkey).inserted }.map { entry -> [String] in
            var tag = ["p", entry.pubkey.hex]
            if !entry.relay.isEmpty || !entry.petname.isEmpty { tag.append(entry.relay) }
            if !entry.petname.isEmpty { tag.append(entry.petname) }
            return tag
        }
        return keys.sign(kind: EventKind.followList, tags: tags, content: "", createdAt: createdAt)
    }

    /// Entries of a kind-3 event; invalid keys are skipped.
    public static func entries(_ event: NostrEvent) -> [Entry] {
        guard event.kind == EventKind.followList else { return [] }
        var seen = Set<PublicKey>()
        return event.tags.compactMap { tag in
            guard tag.count >= 2, tag[0] == "p", let key = try? PublicKey(hex: tag[1]), Hex.decode(tag[1], count: 32) != nil,
                seen.insert(key).inserted
            else { return nil }
            return Entry(pubkey: key, relay: tag.count > 2 ? tag[2] : "", petname: tag.count > 3 ? tag[3] : "")
        }
    }

    /// NIP-01 replaceable-event order: the newer `created_at` wins; on a tie the lower id wins.
    public static func isNewer(_ candidate: NostrEvent, than current: NostrEvent) -> Bool {
        if candidate.createdAt != current.createdAt { return candidate.createdAt > current.createdAt }
        return candidate.id < current.id
    }
}
