/// What one connection takes from a relay before it hangs up on it (`RelayTraffic` applies them).
/// Off by default: a client reading its own relays has no reason to; the push gateway's watcher
/// sets them from `WATCH_RELAY_MAX_EVENTS_PER_SECOND` and `WATCH_RELAY_MAX_INVALID`.
public struct RelayLimits: Sendable, Equatable {
    /// Messages of any kind per second, averaged over `RelayTraffic.rateWindow`; nil: no limit.
    /// An average rather than a per-second cap, so that a relay replaying stored events after a
    /// reconnect (a burst) is not taken for a flood.
    public var maxEventsPerSecond: Int?
    /// Invalid events (unreadable messages, and whatever the consumer reports: junk, a bad id, a
    /// bad signature) within `RelayTraffic.invalidWindow`; more closes the connection. nil: no limit.
    public var maxInvalid: Int?
    /// The delay before reconnecting to a relay that broke a limit, growing while it keeps doing
    /// so: longer than the ordinary backoff, since the relay answered and misbehaved.
    public var backoff: RelayBackoff

    public init(
        maxEventsPerSecond: Int? = nil, maxInvalid: Int? = nil,
        backoff: RelayBackoff = RelayBackoff(base: .seconds(5), cap: .seconds(300))
    ) {
        self.maxEventsPerSecond = maxEventsPerSecond
        self.maxInvalid = maxInvalid
        self.backoff = backoff
    }
}
