/// The paging rule for history older than the live window (docs/linkstr-wire.md §1): pages of `until`
/// + `limit`, starting at 500; each page continues below its oldest event, and a full page that
/// spans a single second doubles the limit (up to 4000) so a burst within one second cannot stall
/// the paging.
///
/// The live subscription's stored events are the first page, and they only reach back to its
/// `since` (two days): a short first page says nothing about what lies below that, so paging goes
/// on from there. A short page is no proof of the end either (relays cap `limit` below what was
/// asked, or end a slow query early): paging ends with a page that holds nothing older than its
/// `until`, or at `floor`, the point below which this device already took in the relay's history
/// on an earlier run (nil on a restore or a relay new to the account: page to the beginning).
public struct HistoryPager: Sendable, Equatable {
    public var limit: Int
    public let maxLimit: Int
    public let floor: Int64?
    /// How far back the live subscription's stored events reach (its `since`, or later): where
    /// paging below the window starts, and the relay's next floor once paging completes. Nil for
    /// paging without a live window.
    public let windowStart: Int64?
    /// The `until` of the page being asked for (nil before the first backfill page).
    public private(set) var until: Int64?

    public init(limit: Int = 500, maxLimit: Int = 4000, floor: Int64? = nil, windowStart: Int64? = nil) {
        self.limit = limit
        self.maxLimit = max(limit, maxLimit)
        self.floor = floor
        self.windowStart = windowStart
    }

    /// What to ask for after the live subscription's stored events: `count` of them, from
    /// `oldest` to `newest` (nil when there were none), all at or after `windowStart`. The next
    /// `until`, or nil when history is complete.
    public mutating func next(afterLivePageOf count: Int, oldest: Int64?, newest: Int64?) -> Int64? {
        if let oldest, let newest, count >= limit || windowStart == nil {
            return next(afterPageOf: count, oldest: oldest, newest: newest)
        }
        guard let windowStart else { return nil }
        // Everything at or after windowStart is in; what is older was never asked for.
        if let floor, floor >= windowStart { return nil }
        // `until` is inclusive: the window's first second is asked for again, dropped by wrap id.
        until = windowStart
        return windowStart
    }

    /// What to ask for after a page of `count` events whose `created_at` ran from `oldest` to
    /// `newest`: the next `until`, or nil when history is complete.
    public mutating func next(afterPageOf count: Int, oldest: Int64, newest: Int64) -> Int64? {
        guard count > 0 else { return nil }
        if let until {
            // A relay that ignored `until` sent newer events: stop rather than ask again forever.
            if newest > until { return nil }
            // Nothing older than the second asked for: the end (unless that second filled the
            // page: below, the limit doubles).
            if oldest == until && count < limit { return nil }
        }
        // The page reached what an earlier run already took in.
        if let floor, oldest < floor { return nil }
        if oldest == newest && count >= limit {
            guard limit < maxLimit else {
                // Even the largest page is one second: step past that second rather than loop.
                until = oldest - 1
                return oldest - 1
            }
            limit = min(limit * 2, maxLimit)
            until = oldest
            return oldest
        }
        // `until` is inclusive: the oldest second is asked for again, and its events already seen
        // are dropped by wrap id.
        until = oldest
        return oldest
    }
}
