/// One gift wrap as the watcher received it from one relay, for one watched recipient.
public struct WrapSighting: Sendable, Equatable {
    /// Where in its subscription's life a wrap arrived, which decides whether it is news.
    public enum Phase: Sendable, Equatable {
        /// Before the first EOSE of a subscription for a pubkey this relay never served live:
        /// stored history, recorded as seen and never pushed.
        case history
        /// Before EOSE, for a pubkey this relay already served live (a reconnect, a re-issued
        /// chunk, a shard taken over): unseen ones arrived while nobody listened and are pushed.
        case resumed
        /// After EOSE: the relay just received it. Pushed when unseen, and also when the only
        /// earlier sighting was another relay's history moments ago (`historyRaceSeconds`): a
        /// slower relay's fresh REQ returned the same new wrap as stored before this one
        /// forwarded it.
        case realtime
    }

    public var wrapID: String
    /// A watched pubkey from the wrap's `p` tags.
    public var recipient: String
    /// The relay it came from (carried in the push as `relay`).
    public var relay: String
    public var phase: Phase
    /// When the watcher received it, for the relay-to-queue latency.
    public var receivedAt: ContinuousClock.Instant

    /// Whether an unseen copy becomes a push.
    public var live: Bool { phase != .history }

    public init(wrapID: String, recipient: String, relay: String, phase: Phase, receivedAt: ContinuousClock.Instant = .now) {
        self.wrapID = wrapID
        self.recipient = recipient
        self.relay = relay
        self.phase = phase
        self.receivedAt = receivedAt
    }
}
