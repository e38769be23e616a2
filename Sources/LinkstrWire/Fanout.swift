public import NostrProtocol

/// Who gets a wrap of each payload kind (docs/linkstr-wire.md §1). The sender's own copy is added by
/// `LinkstrRumor.wraps` when the sender is not among these.
public enum Fanout {
    /// - `root`, `reaction`: the active members (self included);
    /// - `session_create`: every member of the snapshot;
    /// - `session_members`: previously active ∪ newly active members;
    /// - `root_delete`, `session_delete`: every member ever known ∪ self.
    public static func recipients(
        for kind: PayloadKind, me: PublicKey, activeMembers: [PublicKey], snapshot: [PublicKey] = [],
        previouslyActive: [PublicKey] = [], everKnown: [PublicKey] = []
    ) -> [PublicKey] {
        switch kind {
        case .root, .reaction: deduplicated(activeMembers)
        case .sessionCreate: deduplicated(snapshot)
        case .sessionMembers: deduplicated(previouslyActive + snapshot)
        case .rootDelete, .sessionDelete: deduplicated(everKnown + [me])
        }
    }

    /// First occurrence kept, order preserved.
    static func deduplicated(_ keys: [PublicKey]) -> [PublicKey] {
        var seen = Set<PublicKey>()
        return keys.filter { seen.insert($0).inserted }
    }
}
