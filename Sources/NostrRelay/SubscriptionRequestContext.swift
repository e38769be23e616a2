/// What a subscription's filters are being computed for, so a window relative to the current
/// time (`since: now − 2 days`) can be kept from sliding past what the client may have missed.
public struct SubscriptionRequestContext: Sendable, Equatable {
    /// From when events may have been missed (Unix seconds); nil for the subscription's first REQ
    /// and for one re-sent only because the relay asked for AUTH.
    ///
    /// Set when the connection on which the subscription had caught up (EOSE) was lost: then it
    /// is the moment of the loss, or, if reading had paused just before (consumers behind, the
    /// socket left unread, and a relay that gives up on a slow client drops what it had queued),
    /// the start of that pause less a margin. Set too when a long read pause makes the
    /// subscription ask again on the same connection (`RelayConfiguration.resubscribeAfterPause`).
    ///
    /// A REQ re-sent with `since: now − window` would skip events created in
    /// `[resumingAfter − window, now − window)`: those published while nothing was read but dated
    /// back (gift wraps are dated up to two days into the past). `since: resumingAfter − window`
    /// covers them.
    public var resumingAfter: Int64?

    public init(resumingAfter: Int64? = nil) {
        self.resumingAfter = resumingAfter
    }

    /// The start of a window of `seconds` that reaches back over the time events may have been
    /// missed.
    public func since(window seconds: Int64, now: Int64) -> Int64 {
        min(now, resumingAfter ?? now) - seconds
    }
}
