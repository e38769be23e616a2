@testable import LinkstrCore
import Testing

/// linkstr's backfill paging rule as a value.
@Suite struct HistoryPagerTests {
    @Test func aFullPageContinuesBelowItsOldestEventAndAShortOneEnds() {
        var pager = HistoryPager()
        #expect(pager.next(afterPageOf: 500, oldest: 1_000, newest: 2_000) == 1_000)
        #expect(pager.limit == 500)
        #expect(pager.next(afterPageOf: 499, oldest: 900, newest: 1_000) == nil)
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
        var pager = HistoryPager()
        #expect(pager.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000, windowStart: 4_000) == 4_000)
        #expect(pager.next(afterLivePageOf: 0, oldest: nil, newest: nil, windowStart: 4_000) == 4_000)
        #expect(pager.next(afterLivePageOf: 500, oldest: 5_000, newest: 6_000, windowStart: 4_000) == 5_000)
        #expect(pager.limit == 500)
    }

    /// The floor is where an earlier run's paging completed: nothing at or below it is asked for
    /// again.
    @Test func pagingStopsAtTheFloor() {
        var below = HistoryPager(floor: 4_000)
        #expect(below.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000, windowStart: 4_500) == 4_500, "history between floor and window")
        #expect(below.next(afterPageOf: 500, oldest: 4_200, newest: 4_500) == 4_200, "a full page above the floor goes on")
        #expect(below.next(afterPageOf: 500, oldest: 4_000, newest: 4_200) == nil, "a page that reached the floor ends it")
        #expect(below.next(afterPageOf: 499, oldest: 4_100, newest: 4_200) == nil, "a short page ends it as always")
        var atWindow = HistoryPager(floor: 4_500)
        #expect(atWindow.next(afterLivePageOf: 3, oldest: 5_000, newest: 6_000, windowStart: 4_500) == nil, "the floor covers the window's start")
        var fullLive = HistoryPager(floor: 5_500)
        #expect(fullLive.next(afterLivePageOf: 500, oldest: 5_000, newest: 6_000, windowStart: 4_500) == nil, "a full live page past the floor")
    }
}
