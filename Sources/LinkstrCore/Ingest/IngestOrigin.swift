/// Where a message came from, which decides read state (R12), whether a live-only rule applies
/// (R5) and whether it may notify.
public enum IngestOrigin: Sendable, Hashable {
    /// Received on a live subscription after EOSE.
    case live
    /// Received as history (before EOSE, or by backfill) into a store that already had content.
    case history
    /// History restored into an empty store: inbound roots arrive read (R12).
    case restore
    /// Sent by this device: the core applies its own messages once the relays accepted them.
    case local

    /// Live messages (and our own, which are sent now) must also pass the membership check
    /// against the current state (R5).
    var isLive: Bool { self == .live || self == .local }
}
