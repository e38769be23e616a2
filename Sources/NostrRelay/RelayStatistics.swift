/// Counters for one connection, for metrics and `/admin/status`.
public struct RelayStatistics: Sendable, Equatable {
    public var connections = 0
    public var failures = 0
    public var events = 0
    public var notices = 0
    public var closed = 0
    /// Messages that were not NIP-01 (binary frames, bad JSON, malformed events).
    public var invalidMessages = 0
    /// Events the consumer found invalid (`RelayConnection.countInvalid`).
    public var invalidEvents = 0
    public var droppedOutbound = 0
    /// Connections closed because the relay broke a limit, by limit, and the latest one broken.
    public var limitDisconnects: [RelayTraffic.Breach: Int] = [:]
    public var lastBreach: RelayTraffic.Breach?
    /// Messages per second and invalid events per second, over the last 10 s.
    public var eventsPerSecond = 0.0
    public var invalidPerSecond = 0.0
    /// Whether reading is paused now (consumers behind), how often it paused and for how long
    /// in all, and how often the subscriptions were sent again after a long pause.
    public var readingPaused = false
    public var readPauses = 0
    public var readPausedTime: Duration = .zero
    public var resubscribedAfterPause = 0
    /// Relay texts (NOTICE, CLOSED, OK) not logged because one was logged moments before.
    public var suppressedLogLines = 0

    public init() {}
}
