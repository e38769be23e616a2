import NostrProtocol

/// Token buckets by key (a client address or a pubkey): each key refills at `perSecond` up to
/// `burst`.
///
/// Memory is bounded without ever walking the table under the lock. Buckets live in two
/// generations: a key is looked up in the current one, then the previous one, and written to the
/// current one. Once a refill period has passed, the current generation becomes the previous one
/// and the old previous one is dropped whole: every bucket in it was last touched more than a
/// refill period ago, so it was full again and forgetting it changes nothing. A generation that
/// reaches `maxKeys / 2` keys rotates early; buckets dropped that way may not have been full, so
/// under a flood of that many distinct keys the limiter forgets sooner, and memory stays capped.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct Generations {
        var current: [String: Bucket] = [:]
        var previous: [String: Bucket] = [:]
        var rotatedAt: ContinuousClock.Instant
    }

    let limit: RateLimitSettings.Limit
    private let maxKeysPerGeneration: Int
    /// How long an untouched bucket takes to fill from empty.
    private let refill: Duration
    private let generations: Locked<Generations>

    package init(limit: RateLimitSettings.Limit, maxKeys: Int = 100_000, now: ContinuousClock.Instant = .now) {
        self.limit = limit
        self.maxKeysPerGeneration = max(1, maxKeys / 2)
        self.refill = .milliseconds(Int64((limit.burst / limit.perSecond * 1000).rounded(.up)))
        self.generations = Locked(Generations(rotatedAt: now))
    }

    /// Takes a token for `key`: nil when allowed, else how long until one is available.
    package func take(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        var dropped: [String: Bucket] = [:]
        let wait = generations.withLock { state -> Duration? in
            if now - state.rotatedAt >= refill || state.current.count >= maxKeysPerGeneration {
                // The dropped generation is freed after the lock is released, not under it.
                dropped = state.previous
                state.previous = state.current
                state.current = [:]
                state.rotatedAt = now
            }
            var bucket = state.current[key] ?? state.previous[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = (now - bucket.updated).inSeconds
            bucket.tokens = min(limit.burst, bucket.tokens + max(0, elapsed) * limit.perSecond)
            bucket.updated = now
            defer { state.current[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return .milliseconds(Int64(((1 - bucket.tokens) / limit.perSecond * 1000).rounded(.up)))
        }
        _ = dropped
        return wait
    }

    /// Gives back a token taken for a request that turned out not to count (a replayed header).
    package func refund(_ key: String) {
        generations.withLock { state in
            guard var bucket = state.current[key] ?? state.previous[key] else { return }
            bucket.tokens = min(limit.burst, bucket.tokens + 1)
            state.current[key] = bucket
        }
    }

    /// Keys held across both generations (a key can be in both for a moment; counted once each).
    package var count: Int { generations.withLock { $0.current.count + $0.previous.count } }
}
