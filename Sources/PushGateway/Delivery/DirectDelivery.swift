import NostrProtocol

/// Jobs this instance has just queued already claimed (leased, attempt 1, in the same statement
/// that queued them), handed straight to its delivery worker: they skip the claim query, which
/// saves PostgreSQL a lock, an update and a join per job. The relay watcher and `POST /v1/push`
/// queue this way. A leased job's `next_attempt_at` is its lease's end, so the claim query's
/// index scan never steps over jobs in flight here.
///
/// Bounded: while about `limit` jobs are in flight here, new jobs are queued unleased and wait
/// in PostgreSQL for the delivery loops, so a burst waits on disk, not in memory. If the process
/// dies before a send, the lease runs out and any instance claims the job: at-least-once, as
/// for a claimed job.
public final class DirectDelivery: Sendable {
    public let leaseSeconds: Int
    public let limit: Int
    private let send: @Sendable ([ClaimedJob]) async -> Void
    private let inFlight = Locked(0)

    public init(leaseSeconds: Int, limit: Int = 1024, send: @escaping @Sendable ([ClaimedJob]) async -> Void) {
        self.leaseSeconds = leaseSeconds
        self.limit = limit
        self.send = send
    }

    /// The lease to queue new jobs under, or nil when they should wait in the queue instead.
    /// Callers racing past the check overshoot the limit by at most one batch each.
    public func lease() -> Int? {
        inFlight.withLock { $0 < limit } ? leaseSeconds : nil
    }

    /// Sends `jobs` (queued under `lease()`) without waiting for them: the caller goes on with
    /// its next batch or request.
    public func start(_ jobs: [ClaimedJob]) {
        guard !jobs.isEmpty else { return }
        inFlight.withLock { $0 += jobs.count }
        Task {
            await send(jobs)
            inFlight.withLock { $0 -= jobs.count }
        }
    }

    public var pending: Int { inFlight.withLock { $0 } }

    /// Waits until every started send finished, or the lease time passed (by then the jobs are
    /// anyone's to claim again): called on graceful shutdown, before the APNs connections and the
    /// database pool close.
    public func drain() async {
        let deadline = ContinuousClock.now + .seconds(leaseSeconds)
        while pending > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
