import Crypto
import NostrProtocol

/// Authorization events this instance has seen used (or refused as replayed) within the auth
/// window, so that a replayed header is refused before it is charged to its pubkey's rate limit.
///
/// PostgreSQL stays the authority on single use across instances; this only keeps a replay from
/// costing the victim budget. Memory is bounded the way `RateLimiter`'s is: two generations, each
/// covering one window, dropped whole, and a generation that fills rotates early (a key forgotten
/// that way is still refused by the database, and its charge is refunded). A key is kept as a
/// fixed-size SHA-256 fingerprint, not as the text: a linkstr nonce is chosen by the client and
/// can be as long as `HTTPAuth.maxNonceBytes`, and a full generation would otherwise hold that
/// much per header on the heap.
package final class UsedAuthorizations: Sendable {
    /// The SHA-256 of a key, stored inline in the set (no allocation per key).
    package struct Fingerprint: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ key: String) {
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { SHA256.hash(data: Array(key.utf8)).withUnsafeBytes($0.copyMemory(from:)) }
            self.words = words
        }

        package static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
        }
    }

    private struct Generations {
        var current: Set<Fingerprint> = []
        var previous: Set<Fingerprint> = []
        var rotatedAt: ContinuousClock.Instant
    }

    private let window: Duration
    private let maxKeysPerGeneration: Int
    private let generations: Locked<Generations>

    /// `window` must cover how long a header stays acceptable (twice the allowed clock skew).
    package init(window: Duration, maxKeys: Int = 200_000, now: ContinuousClock.Instant = .now) {
        self.window = window
        self.maxKeysPerGeneration = max(1, maxKeys / 2)
        self.generations = Locked(Generations(rotatedAt: now))
    }

    /// A key kept longer than its header stays valid does no harm: such a header is refused as
    /// expired before anyone asks.
    package func contains(_ key: String) -> Bool {
        let fingerprint = Fingerprint(key)
        return generations.withLock { $0.current.contains(fingerprint) || $0.previous.contains(fingerprint) }
    }

    package func insert(_ key: String, now: ContinuousClock.Instant = .now) {
        let fingerprint = Fingerprint(key)
        var dropped: Set<Fingerprint> = []
        generations.withLock { state in
            if now - state.rotatedAt >= window || state.current.count >= maxKeysPerGeneration {
                dropped = state.previous
                state.previous = state.current
                state.current = []
                state.rotatedAt = now
            }
            state.current.insert(fingerprint)
        }
        _ = dropped
    }
}
