import Foundation
public import Logging
public import ServiceLifecycle

/// Drains the queue: claims due jobs, sends them concurrently (bounded), and applies what APNs
/// answered: finish, remove the device, refresh the provider token and retry, back off, or drop.
/// A `Service`: it stops claiming on graceful shutdown and lets in-flight sends finish.
public struct DeliveryWorker: Service {
    let queue: DeliveryQueue
    let sender: any APNsSender
    let logger: Logger
    var retryPolicy = RetryPolicy()
    /// Jobs claimed per round, and sent concurrently.
    public var batchSize = 64
    /// How long to wait when the queue is empty.
    public var idleInterval: Duration = .milliseconds(200)
    /// Called after a 403 ExpiredProviderToken so the token cache can refresh.
    var onExpiredProviderToken: @Sendable (ClaimedJob) async -> Void = { _ in }

    public init(queue: DeliveryQueue, sender: any APNsSender, logger: Logger, batchSize: Int = 64, idleInterval: Duration = .milliseconds(200)) {
        self.queue = queue
        self.sender = sender
        self.logger = logger
        self.batchSize = batchSize
        self.idleInterval = idleInterval
    }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let delivered: Int
            do {
                delivered = try await runOnce()
            } catch {
                // The database may be restarting: keep the worker alive and try again shortly.
                logger.warning("delivery round failed", metadata: ["error.type": "\(type(of: error))"])
                delivered = 0
            }
            if delivered == 0 {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: idleInterval) }
            }
        }
    }

    /// One round: returns how many jobs were claimed.
    @discardableResult
    public func runOnce() async throws -> Int {
        let jobs = try await queue.claim(limit: batchSize)
        guard !jobs.isEmpty else { return 0 }
        await withTaskGroup(of: Void.self) { group in
            for job in jobs {
                group.addTask { await deliver(job) }
            }
        }
        return jobs.count
    }

    func deliver(_ job: ClaimedJob) async {
        let result = await sender.send(job)
        let outcome = APNsResponseClassifier.classify(status: result.status, reason: result.reason, timestampMilliseconds: result.timestampMilliseconds)
        let metadata: Logger.Metadata = ["apns.id": "\(job.apnsID)", "apns.token": "\(DeviceToken.redacted(job.deviceToken))", "apns.status": "\(result.status)"]
        do {
            switch outcome {
            case .delivered:
                try await queue.finish(job)
            case .removeDevice(let reason, let since):
                let invalidSince = since.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? job.deviceUpdatedAt
                // 1 ms of slack absorbs timestamp rounding between PostgreSQL (µs) and Date (Double).
                let removed = try await queue.removeDevice(
                    token: job.deviceToken, notUpdatedAfter: min(invalidSince, job.deviceUpdatedAt).addingTimeInterval(0.001))
                if !removed { try await queue.finish(job) }
                logger.notice("device token rejected by APNs", metadata: metadata.merging(["apns.reason": "\(reason)", "push.device_removed": "\(removed)"]) { $1 })
            case .refreshTokenAndRetry(let reason):
                await onExpiredProviderToken(job)
                try await retryOrExpire(job, reason: reason)
            case .retry(let reason):
                try await retryOrExpire(job, reason: reason)
            case .drop(let reason):
                try await queue.finish(job)
                logger.warning("push dropped", metadata: metadata.merging(["apns.reason": "\(reason)"]) { $1 })
            }
        } catch {
            // The lease will expire and the job will be claimed again: at-least-once.
            logger.warning("could not record delivery outcome", metadata: metadata.merging(["error.type": "\(type(of: error))"]) { $1 })
        }
    }

    private func retryOrExpire(_ job: ClaimedJob, reason: String) async throws {
        let delay = retryPolicy.delay(afterAttempt: job.attempts)
        if Date().addingTimeInterval(delay) >= job.expiresAt {
            try await queue.finish(job)
            logger.notice("push expired before delivery", metadata: ["apns.id": "\(job.apnsID)", "apns.reason": "\(reason)"])
        } else {
            try await queue.reschedule(job, delaySeconds: delay, error: reason)
        }
    }
}
