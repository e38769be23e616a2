/// What a subscription's filters are being computed for, so a window relative to the current
/// time (`since: now − 2 days`) can be kept from sliding past what a dropped connection missed.
public struct RequestContext: Sendable, Equatable {
    /// When the connection on which this subscription was last caught up (its EOSE received) was
    /// lost (Unix seconds); nil for the subscription's first REQ.
    ///
    /// A REQ re-sent after a reconnect with `since: now − window` would skip events created in
    /// `[lost − window, now − window)`: those published while the connection was down but dated
    /// back (gift wraps are dated up to two days into the past). `since: resumingAfter − window`
    /// covers them.
    public var resumingAfter: Int64?

    public init(resumingAfter: Int64? = nil) {
        self.resumingAfter = resumingAfter
    }

    /// The start of a window of `seconds` that reaches back over the time the connection was down.
    public func since(window seconds: Int64, now: Int64) -> Int64 {
        min(now, resumingAfter ?? now) - seconds
    }
}
