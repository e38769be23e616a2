/// A value read from somewhere costly (the database), refreshed at most once per `interval`
/// however often it is asked for.
///
/// `/readyz` and `/metrics` are polled by orchestrators and scrapers, and anyone can ask for them:
/// each request reading PostgreSQL would let a flood of probes turn into a flood of queries. Callers
/// within the interval get the cached value; callers while a refresh runs wait for that refresh
/// instead of starting their own.
package actor ThrottledSnapshot<Value: Sendable> {
    private let interval: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let refresh: @Sendable () async -> Value
    private var cached: (value: Value, at: ContinuousClock.Instant)?
    private var inFlight: Task<Value, Never>?
    /// How many times `refresh` ran (for tests and the curious).
    package private(set) var refreshes = 0

    package init(
        interval: Duration = .seconds(1), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        refresh: @escaping @Sendable () async -> Value
    ) {
        self.interval = interval
        self.now = now
        self.refresh = refresh
    }

    package func value() async -> Value {
        if let cached, now() - cached.at < interval { return cached.value }
        if let inFlight { return await inFlight.value }
        refreshes += 1
        let task = Task { await refresh() }
        inFlight = task
        let value = await task.value
        cached = (value, now())
        inFlight = nil
        return value
    }
}
