import LinkstrCore
import Testing

/// linkstr's backfill paging rule as a value.
@Suite struct HistoryPagerTests {
    /// Every page continues below its oldest event, a short one too (a relay may cap `limit`);
    /// the end is a page with nothing older than its `until`.
    @Test func pagingContinuesUntilAPageHoldsNothingOlder() {
        var pager = HistoryPager()
        #expect(pager.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == 1_000)
        #expect(pager.limit == 500 && pager.until == 1_000)
        #expect(pager.next(afterPageOf: 300, oldest: 900, newest: 1_000) == 900, "a short page goes on")
        #expect(pager.next(afterPageOf: 2, oldest: 900, newest: 900) == nil, "only the second asked for again: the end")
        var empty = HistoryPager()
        #expect(empty.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == 1_000)
        #expect(empty.next(afterPageOf: 0, oldest: 0, newest: 0) == nil, "an empty page: the end")
    }

    /// A relay that ignores `until` answers with newer events every time: paging stops instead of
    /// asking for the same page forever.
    @Test func aRelayThatIgnoresUntilEndsThePaging() {
        var same = HistoryPager()
        #expect(same.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == 1_000)
        #expect(same.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == nil, "the same page again")
        var newer = HistoryPager()
        #expect(newer.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == 1_000)
        #expect(newer.next(afterPageOf: 500, oldest: 1_500, newest: 2_500) == nil, "newer events than asked for")
    }

    @Test func aFullPageWithinOneSecondDoublesTheLimitUpTo4000() {
        var pager = HistoryPager()
        #expect(pager.next(afterPageOf: 500, oldest: 1_000, newest: 1_000) == 1_000 && pager.limit == 1_000)
        #expect(pager.next(afterPageOf: 1_000, oldest: 1_000, newest: 1_000) == 1_000 && pager.limit == 2_000)
        #expect(pager.next(afterPageOf: 2_000, oldest: 1_000, newest: 1_000) == 1_000 && pager.limit == 4_000)
        // At the largest page, a second that still fills it is stepped over instead of asked again.
        #expect(pager.next(afterPageOf: 4_000, oldest: 1_000, newest: 1_000) == 999 && pager.limit == 4_000)
        // The larger limit stays for the pages after.
        #expect(pager.next(afterPageOf: 4_000, oldest: 500, newest: 999) == 500)
    }

    /// The live page only reaches back to the window's start: short or empty, paging goes on below
    /// it; full, it pages on from its oldest event like any page.
    @Test func aShortLivePageContinuesBelowTheWindow() {
        var pager = HistoryPager(windowStart: 4_000)
        #expect(pager.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000) == 4_000)
        #expect(pager.until == 4_000)
        var empty = HistoryPager(windowStart: 4_000)
        #expect(empty.next(afterLivePageOf: 0, oldest: nil, newest: nil) == 4_000)
        var full = HistoryPager(windowStart: 4_000)
        #expect(full.next(afterLivePageOf: 500, oldest: 5_000, newest: 6_000) == 5_000)
        #expect(full.limit == 500)
    }

    /// The floor is where an earlier run's paging completed: nothing below it is asked for again.
    @Test func pagingStopsAtTheFloor() {
        var below = HistoryPager(floor: 4_000, windowStart: 4_500)
        #expect(below.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000) == 4_500, "history between floor and window")
        #expect(below.next(afterPageOf: 500, oldest: 4_200, newest: 4_500) == 4_200, "a page above the floor goes on")
        #expect(below.next(afterPageOf: 500, oldest: 3_999, newest: 4_200) == nil, "a page that passed the floor ends it")
        var atWindow = HistoryPager(floor: 4_500, windowStart: 4_500)
        #expect(atWindow.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000) == nil, "the floor covers the window's start")
        var fullLive = HistoryPager(floor: 5_500, windowStart: 4_500)
        #expect(fullLive.next(afterLivePageOf: 500, oldest: 5_000, newest: 6_000) == nil, "a full live page past the floor")
    }
}
