/// What APNs answered one request, as `HTTP2APNsSender` reads it before classifying it.
/// `status` 0 means no answer (connection failure) or a refusal before sending, with `reason`
/// saying which.
struct APNsAnswer: Sendable, Equatable {
    var status: Int
    var reason: String?
    /// Apple's 410 `timestamp` (milliseconds since 1970).
    var timestampMilliseconds: Int64?
    /// The provider token the request carried (never logged): an `ExpiredProviderToken` answer
    /// refreshes exactly that one.
    var providerToken: String?

    init(status: Int, reason: String? = nil, timestampMilliseconds: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }

    var result: PushSendResult { .apns(status: status, reason: reason, timestampMilliseconds: timestampMilliseconds) }
}
