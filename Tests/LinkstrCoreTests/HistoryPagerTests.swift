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
}
