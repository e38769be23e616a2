/// What the ingest rules decided for one message.
public enum IngestOutcome: Sendable, Equatable {
    case applied
    /// Dropped for good, with the reason.
    case ignored(String)
    /// Held in memory until what it depends on arrives (the session, a membership change, the root).
    case pending(String)
    /// Seen before (same wrap, or the same rumor through another wrap).
    case duplicate
}
