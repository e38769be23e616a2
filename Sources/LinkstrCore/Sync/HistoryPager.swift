/// The paging rule for history older than the live window (linkstr-wire.md §1): pages of `until`
/// + `limit`, starting at 500; a full page continues below its oldest event, and a full page that
/// spans a single second doubles the limit (up to 4000) so a burst within one second cannot stall
/// the paging.
public struct HistoryPager: Sendable, Equatable {
    public var limit: Int
    public let maxLimit: Int

    public init(limit: Int = 500, maxLimit: Int = 4000) {
        self.limit = limit
        self.maxLimit = max(limit, maxLimit)
    }

    /// What to ask for after a page of `count` events whose `created_at` ran from `oldest` to
    /// `newest`: the next `until`, or nil when history is complete.
    public mutating func next(afterPageOf count: Int, oldest: Int64, newest: Int64) -> Int64? {
        guard count >= limit else { return nil }
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
