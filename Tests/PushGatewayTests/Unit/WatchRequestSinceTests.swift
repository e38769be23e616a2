import NostrRelay
import PushGateway
import Testing

/// Where a gift-wrap REQ starts (`RelayWatcher.since`): a window before now, reaching back over
/// what may have been missed, and never past what `seen_wraps` still remembers.
struct WatchRequestSinceTests {
    let now: Int64 = 1_800_000_000
    let window = WatchSettings.windowSeconds
    /// The earliest `since` there is: seen wraps are kept for `seenRetentionSeconds`, less an hour.
    var earliest: Int64 { now - WatchSettings.seenRetentionSeconds + 3_600 }

    @Test func aFirstRequestAsksForTheWindowBeforeNow() {
        #expect(RelayWatcher.since(SubscriptionRequestContext(), watchedUntil: nil, now: now) == now - window)
    }

    @Test func aRequestResentAfterALossReachesBackFromTheLoss() {
        #expect(RelayWatcher.since(SubscriptionRequestContext(resumingAfter: now - 600), watchedUntil: nil, now: now) == now - 600 - window)
    }

    @Test func aShardTakenOverReachesBackFromWhenItsOwnerStoppedLessAMinute() {
        #expect(RelayWatcher.since(SubscriptionRequestContext(), watchedUntil: now - 600, now: now) == now - 660 - window)
        // Both: the earlier of the two.
        #expect(
            RelayWatcher.since(SubscriptionRequestContext(resumingAfter: now - 6_000), watchedUntil: now - 600, now: now)
                == now - 6_000 - window)
        #expect(
            RelayWatcher.since(SubscriptionRequestContext(resumingAfter: now - 100), watchedUntil: now - 600, now: now)
                == now - 660 - window)
    }

    @Test func aMomentAheadOfTheClockNeverNarrowsTheWindow() {
        #expect(RelayWatcher.since(SubscriptionRequestContext(), watchedUntil: now + 3_600, now: now) == now - window)
        #expect(RelayWatcher.since(SubscriptionRequestContext(resumingAfter: now + 3_600), watchedUntil: nil, now: now) == now - window)
    }

    @Test func neverFurtherBackThanSeenWrapsAreKept() {
        let week: Int64 = 7 * 86_400
        #expect(RelayWatcher.since(SubscriptionRequestContext(resumingAfter: now - week), watchedUntil: nil, now: now) == earliest)
        #expect(RelayWatcher.since(SubscriptionRequestContext(), watchedUntil: now - week, now: now) == earliest)
        // Just inside the bound: unchanged.
        let inside = now + (earliest - (now - window)) / 2
        #expect(RelayWatcher.since(SubscriptionRequestContext(), watchedUntil: inside + 60, now: now) == inside - window)
        #expect(earliest < now - window, "the bound leaves room to reach back at all")
    }
}
