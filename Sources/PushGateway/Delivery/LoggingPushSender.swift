import GatewayWire
public import Logging

/// `APNS_DISABLE=1`: logs each notification (device redacted) and reports success.
public struct LoggingPushSender: PushSender {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func send(_ job: ClaimedJob) async -> PushSendResult {
        logger.info(
            "push (delivery disabled)",
            metadata: [
                "push.id": "\(job.apnsID)", "push.platform": "\(job.destination.platform.rawValue)",
                "push.device": "\(DeviceToken.redacted(job.deviceToken))", "apns.topic": "\(job.topic)",
                "push.type": "\(job.notification.type.rawValue)",
            ])
        return PushSendResult(status: 200, outcome: .delivered)
    }
}
