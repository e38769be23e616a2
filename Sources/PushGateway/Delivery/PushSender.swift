/// A transport to one push service (APNs, FCM, a Web Push service): sends notifications and
/// says, per job, what the service answered and what the worker should do about it.
public protocol PushSender: Sendable {
    func send(_ job: ClaimedJob) async -> PushSendResult
    /// Sends a delivery round at once; the results in the jobs' order. A sender that can batch
    /// (one hop to each connection, one flush) implements it; the default sends each job
    /// concurrently through `send(_:)`.
    func send(_ jobs: [ClaimedJob]) async -> [PushSendResult]
}

extension PushSender {
    public func send(_ jobs: [ClaimedJob]) async -> [PushSendResult] {
        await concurrentlyInOrder(jobs) { await send($0) }
    }
}
