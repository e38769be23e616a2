import GatewayWire
public import Logging

/// Sends notifications and reports what APNs answered.
public protocol APNsSender: Sendable {
    func send(_ job: ClaimedJob) async -> APNsSendResult
    /// Sends a delivery round at once; the answers in the jobs' order. A sender that can batch
    /// (one hop to each connection, one flush) implements it; the default sends each job
    /// concurrently through `send(_:)`.
    func send(_ jobs: [ClaimedJob]) async -> [APNsSendResult]
}

extension APNsSender {
    public func send(_ jobs: [ClaimedJob]) async -> [APNsSendResult] {
        await concurrentlyInOrder(jobs) { await send($0) }
    }
}

/// What APNs answered. `status` 0 means no answer (connection failure) or a refusal before
/// sending, with `reason` saying which.
public struct APNsSendResult: Sendable, Equatable {
    public var status: Int
    public var reason: String?
    /// Apple's 410 `timestamp` (milliseconds since 1970).
    public var timestampMilliseconds: Int64?
    /// The provider token the request carried (never logged).
    public var providerToken: String?

    public init(status: Int, reason: String? = nil, timestampMilliseconds: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }
}

/// `APNS_DISABLE=1`: logs each notification (token redacted) and reports success.
public struct LoggingAPNsSender: APNsSender {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func send(_ job: ClaimedJob) async -> APNsSendResult {
        logger.info(
            "push (APNs disabled)",
            metadata: [
                "apns.id": "\(job.apnsID)", "apns.token": "\(DeviceToken.redacted(job.deviceToken))", "apns.topic": "\(job.topic)",
                "apns.environment": "\(job.environment.rawValue)", "push.type": "\(job.notification.type.rawValue)",
            ])
        return APNsSendResult(status: 200)
    }
}
