import Synchronization

/// Token buckets by key (a client IP or a pubkey): each key refills at `perSecond` up to `burst`.
/// Buckets idle long enough to be full again are dropped when the table grows, so memory stays
/// bounded by the number of keys active within one refill period.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let limit: RateLimitSettings.Limit
    private let maxKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    init(limit: RateLimitSettings.Limit, maxKeys: Int = 100_000) {
        self.limit = limit
        self.maxKeys = maxKeys
    }

    /// Takes a token for `key`: nil when allowed, else how long until one is available.
    func take(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = Self.seconds(now - bucket.updated)
            bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.perSecond)
            bucket.updated = now
            defer {
                if buckets.count > maxKeys { prune(&buckets, now: now) }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                return nil
            }
            buckets[key] = bucket
            return .milliseconds(Int64(((1 - bucket.tokens) / limit.perSecond * 1000).rounded(.up)))
        }
    }

    var count: Int { buckets.withLock { $0.count } }

    private func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let refill = limit.burst / limit.perSecond
        buckets = buckets.filter { Self.seconds(now - $0.value.updated) < refill }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
