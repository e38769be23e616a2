/// One gift wrap as the watcher received it from one relay, for one watched recipient.
public struct WrapSighting: Sendable, Equatable {
    public var wrapID: String
    /// A watched pubkey from the wrap's `p` tags.
    public var recipient: String
    /// The relay it came from (carried in the push as `relay`).
    public var relay: String
    /// False for history (received before the subscription's EOSE): recorded as seen, never pushed.
    public var live: Bool
    /// When the watcher received it, for the relay-to-queue latency.
    public var receivedAt: ContinuousClock.Instant

    public init(wrapID: String, recipient: String, relay: String, live: Bool, receivedAt: ContinuousClock.Instant = .now) {
        self.wrapID = wrapID
        self.recipient = recipient
        self.relay = relay
        self.live = live
        self.receivedAt = receivedAt
    }
}
