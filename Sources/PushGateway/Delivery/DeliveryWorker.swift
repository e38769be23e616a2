import Foundation
import GatewayWire
public import Logging
public import ServiceLifecycle

/// Drains the queue: claims due jobs, sends them concurrently (bounded) through the sender (a
/// `PushRouter` in the gateway), and applies what each push service answered: finish, remove the
/// device, retry with backoff, or drop.
/// A `Service`: it stops claiming on graceful shutdown and lets in-flight sends finish.
public struct DeliveryWorker: Service {
    let queue: DeliveryQueue
    let sender: any PushSender
    let logger: Logger
    let metrics: GatewayMetrics?
    let settings: DeliverySettings
    package var retryPolicy = RetryPolicy()
    /// How long a loop waits when the queue is empty.
    public var idleInterval: Duration = .milliseconds(200)
    /// Signalled when this instance queues something: idle loops claim at once.
    let wakeup: WakeupSignal?
    /// Jobs queued already leased and sent through `process` without a claim; drained on
    /// graceful shutdown like the loops' own rounds.
    public var direct: DirectDelivery?

    public init(
        queue: DeliveryQueue, sender: any PushSender, settings: DeliverySettings = DeliverySettings(), metrics: GatewayMetrics? = nil,
        logger: Logger, idleInterval: Duration = .milliseconds(200), wakeup: WakeupSignal? = nil
    ) {
        self.wakeup = wakeup
        self.queue = queue
        self.sender = sender
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.idleInterval = idleInterval
    }

    /// `settings.loops` claim-and-send loops until graceful shutdown; each finishes its round.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for _ in 0..<settings.loops {
                    group.addTask { await loop() }
                }
            }
        } onGracefulShutdown: { [wakeup] in
            // Idle loops wake one a tick; shutting down, they all go at once.
            wakeup?.stop()
        }
        await direct?.drain()
    }

    private func loop() async {
        // A poll after an empty round asks first whether anything is due, and claims only then:
        // an idle instance's polls cost PostgreSQL one prepared index read each instead of two
        // statements planned afresh. Work queued here (a signal) is claimed at once.
        var askFirst = false
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            var delivered = 0
            do {
                let due = askFirst ? try await queue.anythingDue() : true
                if due { delivered = try await runOnce() }
            } catch {
                // The database may be restarting: keep the worker alive and try again shortly.
                logger.warning("delivery round failed", metadata: ["error.type": "\(type(of: error))"])
            }
            // Busy: claim again at once, without asking.
            askFirst = false
            if delivered == 0 {
                if let wakeup {
                    let wake = await wakeup.wait()
                    if wake == .stopped { break }
                    askFirst = wake == .tick
                } else {
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: idleInterval) }
                    askFirst = true
                }
            } else if delivered >= settings.batchSize {
                // A full round: more is likely due (another instance's, or leases run out), and
                // every idle loop joins at once.
                wakeup?.signal()
            } else {
                // Work found: more may be due. Idle loops poll one a tick, so the next one is
                // woken now, and asks first.
                wakeup?.wakeOldest()
            }
        }
    }

    /// One round: claims up to a batch, sends it as one round, records the outcomes (deliveries in
    /// one statement). Returns how many jobs were claimed.
    @discardableResult
    public func runOnce() async throws -> Int {
        let jobs = try await queue.claim(limit: settings.batchSize, leaseSeconds: settings.leaseSeconds)
        guard !jobs.isEmpty else { return 0 }
        await process(jobs)
        return jobs.count
    }

    /// Sends claimed (leased) jobs as one round and records the outcomes, the finished ones in
    /// one statement. Also called directly by the relay watcher with the jobs it just queued and
    /// leased itself, which saves them the trip through the claim query. Batch members come with
    /// their whole batch, which is finished in the same statement that queues its retries.
    public func process(_ jobs: [ClaimedJob]) async {
        let results = await sender.send(jobs)
        var finished: [ClaimedJob] = []
        finished.reserveCapacity(jobs.count)
        var followUps: [(ClaimedJob, PushSendResult)] = []
        for (job, result) in zip(jobs, results) {
            if result.outcome == .delivered {
                finished.append(job)
            } else {
                followUps.append((job, result))
            }
        }
        // A delivery records nothing but its count: the round's are counted at once.
        if !finished.isEmpty { metrics?.push(outcome: "delivered", reason: nil, count: finished.count) }
        // Anything but a delivery may need the database (remove the device, reschedule): those
        // run concurrently, the deliveries above needed nothing more than the batch delete.
        var retries: [MemberRetry] = []
        if !followUps.isEmpty {
            let settled = await withTaskGroup(of: (ClaimedJob, Disposition).self) { group in
                for (job, result) in followUps {
                    group.addTask { (job, await apply(result, to: job)) }
                }
                var settled: [(ClaimedJob, Disposition)] = []
                for await outcome in group { settled.append(outcome) }
                return settled
            }
            for (job, disposition) in settled {
                switch disposition {
                case .finished:
                    finished.append(job)
                case .retry(let delay, let reason):
                    // A batch member is queued again as a job of its own when its batch is finished.
                    retries.append(MemberRetry(member: job, delaySeconds: delay, reason: reason))
                case .leftForLease:
                    // A batch is finished as a whole: the member's service rejected its device, and
                    // what could not be recorded about that does not hold back its batch.
                    if job.inBatch { finished.append(job) }
                }
            }
        }
        do {
            try await queue.finish(finished, retrying: retries)
        } catch {
            // The leases will run out and the jobs be sent again: at-least-once.
            logger.warning(
                "could not record deliveries",
                metadata: ["error.type": "\(type(of: error))", "push.jobs": "\(finished.count + retries.count)"])
        }
    }

    /// What becomes of a job once its push service has answered.
    enum Disposition: Equatable {
        /// Done: delete it (delivered, or dropped for good).
        case finished
        /// A batch member to queue again as a job of its own after `delaySeconds`.
        case retry(delaySeconds: Double, reason: String)
        /// Left as it is: rescheduled already, removed with its device, or (on a database error)
        /// to be claimed again when its lease runs out.
        case leftForLease
    }

    /// Applies what the push service answered for `job`, and says what becomes of the job. A job
    /// of `push_jobs` to retry is rescheduled here; a batch member's retry is returned, for the
    /// statement that finishes its batch.
    func apply(_ result: PushSendResult, to job: ClaimedJob) async -> Disposition {
        let outcome = result.outcome
        let metadata: Logger.Metadata = [
            "push.id": "\(job.apnsID)", "push.platform": "\(job.destination.platform.rawValue)",
            "push.device": "\(DeviceToken.redacted(job.deviceToken))", "push.status": "\(result.status)",
        ]
        record(outcome, result: result, job: job)
        do {
            switch outcome {
            case .delivered:
                return .finished
            case .removeDevice(let reason, let since):
                let invalidSince = since.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? job.deviceUpdatedAt
                // 1 ms of slack absorbs timestamp rounding between PostgreSQL (µs) and Date (Double).
                let removed = try await queue.removeDevice(
                    token: job.deviceToken, notUpdatedAfter: min(invalidSince, job.deviceUpdatedAt).addingTimeInterval(0.001))
                logger.notice(
                    "device rejected by its push service",
                    metadata: metadata.merging(["push.reason": "\(reason)", "push.device_removed": "\(removed)"]) { $1 })
                // Removing the device removed its jobs; a kept device still has this one to finish.
                return removed && !job.inBatch ? .leftForLease : .finished
            case .refreshTokenAndRetry(let reason):
                // The sender has already refreshed the token (rules permitting) and retried once.
                return try await retryOrExpire(job, reason: reason)
            case .retry(let reason, let afterSeconds):
                return try await retryOrExpire(job, reason: reason, notBefore: afterSeconds)
            case .drop(let reason):
                logger.warning("push dropped", metadata: metadata.merging(["push.reason": "\(reason)"]) { $1 })
                return .finished
            case .configurationError(let reason):
                logger.error(
                    "push dropped: the push service refused the gateway's configuration; the device is kept",
                    metadata: metadata.merging(["push.reason": "\(reason)", "apns.topic": "\(job.topic)"]) { $1 })
                return .finished
            }
        } catch {
            // The lease will expire and the job will be claimed again: at-least-once.
            logger.warning("could not record delivery outcome", metadata: metadata.merging(["error.type": "\(type(of: error))"]) { $1 })
            return .leftForLease
        }
    }

    private func record(_ outcome: PushOutcome, result: PushSendResult, job: ClaimedJob) {
        guard let metrics else { return }
        let (name, reason): (String, String?) =
            switch outcome {
            case .delivered: ("delivered", nil)
            case .removeDevice(let reason, _): ("device_removed", reason)
            case .refreshTokenAndRetry(let reason): ("token_refresh", reason)
            case .retry(let reason, _): ("retry", reason)
            case .drop(let reason): ("dropped", reason)
            case .configurationError(let reason): ("configuration_error", reason)
            }
        metrics.push(outcome: name, reason: reason)
        let platform = job.destination.platform.rawValue
        if let reason {
            metrics.recentFailures.record(
                .init(
                    at: Date(), platform: platform, status: result.status, reason: reason, outcome: name,
                    redactedToken: DeviceToken.redacted(job.deviceToken)))
        }
        if case .configurationError(let reason) = outcome { metrics.configurationErrors.record(platform: platform, reason: reason) }
    }

    /// Reschedules with backoff (and no sooner than the service asked, `notBefore` seconds), or
    /// reports the job done when the retry would land after expiry. A batch member is not
    /// rescheduled here: its retry is returned.
    private func retryOrExpire(_ job: ClaimedJob, reason: String, notBefore: Double? = nil) async throws -> Disposition {
        let delay = max(retryPolicy.delay(afterAttempt: job.attempts), notBefore ?? 0)
        if Date().addingTimeInterval(delay) >= job.expiresAt {
            metrics?.push(outcome: "expired", reason: reason)
            logger.notice("push expired before delivery", metadata: ["push.id": "\(job.apnsID)", "push.reason": "\(reason)"])
            return .finished
        }
        if job.inBatch { return .retry(delaySeconds: delay, reason: reason) }
        try await queue.reschedule(job, delaySeconds: delay, error: reason)
        return .leftForLease
    }
}
