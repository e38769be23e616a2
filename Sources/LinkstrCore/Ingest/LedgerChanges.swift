/// What changed in a `LinkstrLedger` since the last `takeChanges()`: the keys whose rows the store
/// must write (present in the ledger) or delete (absent from it).
public struct LedgerChanges: Sendable, Equatable {
    public var sessions: Set<String> = []
    public var posts: Set<String> = []
    public var reactions: Set<Reaction.Key> = []
    public var deletions: Set<String> = []
    /// Wrap ids seen for the first time, so a restart does not open them again.
    public var seenWrapIDs: [String] = []

    public init() {}

    public var isEmpty: Bool {
        sessions.isEmpty && posts.isEmpty && reactions.isEmpty && deletions.isEmpty && seenWrapIDs.isEmpty
    }
}
