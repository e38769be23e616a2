/// What a push service answered one job, and what that means for it. The transport classifies
/// its own service's answers (`APNsResponseClassifier`, `WebPushResponseClassifier`); the worker
/// acts on `outcome` alone.
public struct PushSendResult: Sendable, Equatable {
    /// The HTTP status, 0 when there was no answer (connection failure) or the job was refused
    /// before sending.
    public var status: Int
    /// The service's reason, or the gateway's when it refused before sending.
    public var reason: String?
    public var outcome: PushOutcome

    public init(status: Int, reason: String? = nil, outcome: PushOutcome) {
        self.status = status
        self.reason = reason
        self.outcome = outcome
    }

    /// An APNs answer: `status`, Apple's `reason` and its 410 `timestamp` (milliseconds since 1970).
    public static func apns(status: Int, reason: String? = nil, timestampMilliseconds: Int64? = nil) -> PushSendResult {
        PushSendResult(
            status: status, reason: reason,
            outcome: APNsResponseClassifier.classify(status: status, reason: reason, timestampMilliseconds: timestampMilliseconds))
    }
}
