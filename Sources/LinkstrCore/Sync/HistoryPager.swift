/// The paging rule for history older than the live window (linkstr-wire.md §1): pages of `until`
/// + `limit`, starting at 500; a full page continues below its oldest event, and a full page that
/// spans a single second doubles the limit (up to 4000) so a burst within one second cannot stall
/// the paging.
///
/// The live subscription's stored events are the first page, and they only reach back to its
/// `since` (two days): a short first page says nothing about what lies below that, so paging goes
/// on from there. It stops at `floor`, the point below which this device already took in the
/// relay's history on an earlier run (nil on a restore or a relay new to the account: page to the
/// beginning).
public struct HistoryPager: Sendable, Equatable {
    public var limit: Int
    public let maxLimit: Int
    public let floor: Int64?

    public init(limit: Int = 500, maxLimit: Int = 4000, floor: Int64? = nil) {
        self.limit = limit
        self.maxLimit = max(limit, maxLimit)
        self.floor = floor
    }

    /// What to ask for after the live subscription's stored events: `count` of them, from
    /// `oldest` to `newest` (nil when there were none), all at or after `windowStart`, the
    /// subscription's `since` (or later). The next `until`, or nil when history is complete.
    public mutating func next(afterLivePageOf count: Int, oldest: Int64?, newest: Int64?, windowStart: Int64) -> Int64? {
        if let oldest, let newest, count >= limit {
            return next(afterPageOf: count, oldest: oldest, newest: newest)
        }
        // Everything at or after windowStart is in; what is older was never asked for.
        if let floor, floor >= windowStart { return nil }
        // `until` is inclusive: the window's first second is asked for again, dropped by wrap id.
        return windowStart
    }

    /// What to ask for after a page of `count` events whose `created_at` ran from `oldest` to
    /// `newest`: the next `until`, or nil when history is complete.
    public mutating func next(afterPageOf count: Int, oldest: Int64, newest: Int64) -> Int64? {
        guard count >= limit else { return nil }
        // The page reached what an earlier run already took in.
        if let floor, oldest <= floor { return nil }
        if oldest == newest {
            guard limit < maxLimit else {
                // Even the largest page is one second: step past that second rather than loop.
                return oldest - 1
            }
            limit = min(limit * 2, maxLimit)
            return oldest
        }
        // `until` is inclusive: the oldest second is asked for again, and its events already seen
        // are dropped by wrap id.
        return oldest
    }
}
