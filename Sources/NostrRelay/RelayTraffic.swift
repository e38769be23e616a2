/// One relay connection's inbound traffic in one-second buckets: the event rate and the invalid
/// rate for operators, and whether a `RelayLimits` limit is broken.
///
/// Kept as a value (the connection holds it behind a lock: its reading task counts every message,
/// the consumer reports what fails verification), so the arithmetic is tested without a socket.
public struct RelayTraffic: Sendable, Equatable {
    /// Which limit a relay broke.
    public enum Breach: String, Sendable, Equatable {
        /// More messages than `maxEventsPerSecond` on average over `rateWindow`.
        case flood
        /// More than `maxInvalid` invalid events within `invalidWindow`.
        case invalid
    }

    /// Rates are averages over this many seconds.
    public static let rateWindow = 10
    /// Invalid events are counted over this many seconds for `RelayLimits.maxInvalid`.
    public static let invalidWindow = 60

    private struct Bucket: Equatable {
        var second: Int64 = -1
        var events = 0
        var invalid = 0
    }

    public let limits: RelayLimits
    private let origin: ContinuousClock.Instant
    /// One bucket per second of the longer window, reused round the ring.
    private var buckets = [Bucket](repeating: Bucket(), count: Self.invalidWindow)
    /// The first limit broken; it stays until `reset`, so every later message sees it too.
    public private(set) var breach: Breach?

    public init(limits: RelayLimits, origin: ContinuousClock.Instant = .now) {
        self.limits = limits
        self.origin = origin
    }

    /// Counts `events` messages and `invalid` invalid events at `now`; returns the breach, if a
    /// limit is broken now or was before.
    @discardableResult
    public mutating func record(events: Int = 0, invalid: Int = 0, at now: ContinuousClock.Instant) -> Breach? {
        let second = self.second(now)
        let index = Int(second % Int64(buckets.count))
        if buckets[index].second != second { buckets[index] = Bucket(second: second) }
        buckets[index].events += events
        buckets[index].invalid += invalid
        guard breach == nil else { return breach }
        if invalid > 0, let maxInvalid = limits.maxInvalid, total(.invalid, seconds: Self.invalidWindow, at: second) > maxInvalid {
            breach = .invalid
        } else if events > 0, let maxRate = limits.maxEventsPerSecond,
            total(.events, seconds: Self.rateWindow, at: second) > maxRate * Self.rateWindow
        {
            breach = .flood
        }
        return breach
    }

    /// Messages per second over the last `rateWindow` seconds.
    public func eventsPerSecond(at now: ContinuousClock.Instant) -> Double {
        Double(total(.events, seconds: Self.rateWindow, at: second(now))) / Double(Self.rateWindow)
    }

    /// Invalid events per second over the last `rateWindow` seconds.
    public func invalidPerSecond(at now: ContinuousClock.Instant) -> Double {
        Double(total(.invalid, seconds: Self.rateWindow, at: second(now))) / Double(Self.rateWindow)
    }

    /// A new connection: nothing counted, no breach (limits apply per connection).
    public mutating func reset() {
        buckets = [Bucket](repeating: Bucket(), count: Self.invalidWindow)
        breach = nil
    }

    private func second(_ now: ContinuousClock.Instant) -> Int64 {
        max(0, (now - origin).components.seconds)
    }

    /// Which count of a bucket `total` sums.
    private enum Field {
        case events
        case invalid
    }

    /// The sum of `field` over the `seconds` seconds ending with `current`. It runs for every
    /// message a relay sends, so it reads only the window's buckets (each second has its own, as
    /// `seconds` is at most `buckets.count`), not the whole ring through a key path.
    private func total(_ field: Field, seconds: Int, at current: Int64) -> Int {
        var sum = 0
        var second = current
        let oldest = max(0, current - Int64(min(seconds, buckets.count)) + 1)
        while second >= oldest {
            let bucket = buckets[Int(second % Int64(buckets.count))]
            if bucket.second == second {
                switch field {
                case .events: sum += bucket.events
                case .invalid: sum += bucket.invalid
                }
            }
            second -= 1
        }
        return sum
    }
}
