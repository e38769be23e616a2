import Synchronization

/// Authorization events this instance has seen used (or refused as replayed) within the auth
/// window, so that a replayed header is refused before it is charged to its pubkey's rate limit.
///
/// PostgreSQL stays the authority on single use across instances; this only keeps a replay from
/// costing the victim budget. Memory is bounded the way `RateLimiter`'s is: two generations, each
/// covering one window, dropped whole, and a generation that fills rotates early (a key forgotten
/// that way is still refused by the database, and its charge is refunded).
final class UsedAuthorizations: Sendable {
    private struct Generations {
        var current: Set<String> = []
        var previous: Set<String> = []
        var rotatedAt: ContinuousClock.Instant
    }

    private let window: Duration
    private let maxKeysPerGeneration: Int
    private let generations: Mutex<Generations>

    /// `window` must cover how long a header stays acceptable (twice the allowed clock skew).
    init(window: Duration, maxKeys: Int = 200_000, now: ContinuousClock.Instant = .now) {
        self.window = window
        self.maxKeysPerGeneration = max(1, maxKeys / 2)
        self.generations = Mutex(Generations(rotatedAt: now))
    }

    /// A key kept longer than its header stays valid does no harm: such a header is refused as
    /// expired before anyone asks.
    func contains(_ key: String) -> Bool {
        generations.withLock { $0.current.contains(key) || $0.previous.contains(key) }
    }

    func insert(_ key: String, now: ContinuousClock.Instant = .now) {
        var dropped: Set<String> = []
        generations.withLock { state in
            if now - state.rotatedAt >= window || state.current.count >= maxKeysPerGeneration {
                dropped = state.previous
                state.previous = state.current
                state.current = []
                state.rotatedAt = now
            }
            state.current.insert(key)
        }
        _ = dropped
    }
}
