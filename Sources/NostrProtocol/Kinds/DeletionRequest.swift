/// NIP-09 deletion requests (kind 5).
public enum DeletionRequest {
    /// `["e", id]` for each event and one `["k", kind]` per distinct referenced kind.
    public static func make(
        keys: Keys, eventIDs: [EventID], kinds: [UInt16], reason: String = "", createdAt: Int64 = UnixTime.now()
    ) -> NostrEvent {
        var tags = eventIDs.map { ["e", $0.hex] }
        var seen = Set<UInt16>()
        for kind in kinds where seen.insert(kind).inserted { tags.append(["k", String(kind)]) }
        return keys.sign(kind: EventKind.deletion, tags: tags, content: reason, createdAt: createdAt)
    }

    /// The event ids a deletion request references (malformed `e` values are skipped).
    public static func referencedIDs(_ event: NostrEvent) -> [EventID] {
        guard event.kind == EventKind.deletion else { return [] }
        return event.tagValues("e").compactMap { try? EventID(hex: $0) }
    }
}
