public import Foundation
public import GatewayWire
public import Logging
public import PostgresNIO

/// A job claimed for delivery, joined with its device: a row of `push_jobs`, or one device of a
/// batch (`push_batches`: a typed push, or gift wraps sent at once).
public struct ClaimedJob: Sendable, Equatable {
    /// The job's id, or for a batch member its batch's id.
    public var id: Int64
    /// One device of a batch (`id` names a `push_batches` row): it is finished with its whole
    /// batch, and a retry queues it as a job of its own.
    public var inBatch: Bool
    /// Stable across retries: Apple dedupes and reports by it, and it names the message to every
    /// other push service too.
    public var apnsID: UUID
    /// The device: its platform and what that platform needs to reach it.
    public var destination: PushDestination
    public var pubkey: String
    public var topic: String
    /// When the device was last (re-)registered, for the 410 rule.
    public var deviceUpdatedAt: Date
    public var notification: APNsNotification
    /// Attempts including this one.
    public var attempts: Int
    public var expiresAt: Date

    package init(
        id: Int64, apnsID: UUID, destination: PushDestination, pubkey: String, topic: String, deviceUpdatedAt: Date,
        notification: APNsNotification, attempts: Int, expiresAt: Date, inBatch: Bool = false
    ) {
        self.id = id
        self.inBatch = inBatch
        self.apnsID = apnsID
        self.destination = destination
        self.pubkey = pubkey
        self.topic = topic
        self.deviceUpdatedAt = deviceUpdatedAt
        self.notification = notification
        self.attempts = attempts
        self.expiresAt = expiresAt
    }

    /// A job for an APNs alert token.
    package init(
        id: Int64, apnsID: UUID, deviceToken: String, pubkey: String, environment: APNsEnvironment, topic: String, deviceUpdatedAt: Date,
        notification: APNsNotification, attempts: Int, expiresAt: Date
    ) {
        self.init(
            id: id, apnsID: apnsID, destination: .apns(token: deviceToken, environment: environment, kind: .alert), pubkey: pubkey,
            topic: topic, deviceUpdatedAt: deviceUpdatedAt, notification: notification, attempts: attempts, expiresAt: expiresAt)
    }

    /// What the device is stored under (its token, or its endpoint): how it is removed.
    public var deviceToken: String { destination.address }

    /// The APNs environment of an APNs device; nil on every other platform.
    public var environment: APNsEnvironment? {
        if case .apns(_, let environment, _) = destination { environment } else { nil }
    }
}

extension ClaimedJob {
    /// A job a statement queued already leased (`EnqueuePushStatement`, `RecordWrapsStatement`,
    /// `StoreInboxWrapsStatement`), read from the row's next columns, left-joined and so all NULL
    /// on a row that carries no job (nil then): `id, apns_id, device_token, pubkey,
    /// apns_environment, topic, updated_at`, the statement's own columns (`reading`), then
    /// `attempts, expires_at, platform, push_type, p256dh, auth_secret`. `notification` builds
    /// the payload from the recipient's pubkey and what `reading` read.
    init?<Extra>(
        leasedFrom columns: inout RowColumns, inBatch: Bool = false, reading extra: (inout RowColumns) throws -> Extra,
        notification: (_ pubkey: String, Extra) -> APNsNotification?
    ) throws {
        let (id, apnsID, deviceToken, pubkey) = (
            try columns.optional(Int64.self), try columns.optional(UUID.self), try columns.optional(String.self),
            try columns.optional(String.self)
        )
        let (environment, topic, deviceUpdatedAt) = (
            try columns.optional(String.self), try columns.optional(String.self), try columns.optional(Date.self)
        )
        let extra = try extra(&columns)
        let (attempts, expiresAt) = (try columns.optional(Int.self), try columns.optional(Date.self))
        let (platform, pushType, p256dh, authSecret) = (
            try columns.optional(String.self), try columns.optional(String.self), try columns.optional(String.self),
            try columns.optional(String.self)
        )
        self.init(
            leasedID: id, inBatch: inBatch, apnsID: apnsID, deviceToken: deviceToken, pubkey: pubkey, environment: environment,
            topic: topic, deviceUpdatedAt: deviceUpdatedAt, attempts: attempts, expiresAt: expiresAt,
            device: (platform, pushType, p256dh, authSecret)
        ) { notification($0, extra) }
    }

    /// A leased job from its columns, read in another order (`claimBatches`): nil when the job
    /// columns are NULL or the device row cannot be read.
    init?(
        leasedID id: Int64?, inBatch: Bool = false, apnsID: UUID?, deviceToken: String?, pubkey: String?, environment: String?,
        topic: String?,
        deviceUpdatedAt: Date?, attempts: Int?, expiresAt: Date?,
        device: (platform: String?, pushType: String?, p256dh: String?, authSecret: String?),
        notification: (String) -> APNsNotification?
    ) {
        guard let id, let apnsID, let deviceToken, let pubkey, let platform = device.platform, let pushType = device.pushType,
            let destination = PushDestination(
                storedPlatform: platform, address: deviceToken, environment: environment, pushType: pushType, p256dh: device.p256dh,
                authSecret: device.authSecret),
            let topic, let deviceUpdatedAt, let attempts, let expiresAt, let notification = notification(pubkey)
        else { return nil }
        self.init(
            id: id, apnsID: apnsID, destination: destination, pubkey: pubkey, topic: topic, deviceUpdatedAt: deviceUpdatedAt,
            notification: notification, attempts: attempts, expiresAt: expiresAt, inBatch: inBatch)
    }
}

/// A batch member whose push service asked for a retry: queued again as a job of its own when
/// its batch is finished (`DeliveryQueue.finish(_:retrying:)`).
public struct MemberRetry: Sendable {
    public var member: ClaimedJob
    public var delaySeconds: Double
    public var reason: String

    public init(member: ClaimedJob, delaySeconds: Double, reason: String) {
        self.member = member
        self.delaySeconds = delaySeconds
        self.reason = reason
    }
}

/// The durable queue in PostgreSQL. Workers on any number of instances claim due jobs with
/// `FOR UPDATE SKIP LOCKED` and a lease: a worker that dies mid-send leaves its jobs to be
/// claimed again when the lease ends, so delivery is at-least-once and nothing is lost.
public struct DeliveryQueue: Sendable {
    public let database: Database
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.database = Database(client)
        self.logger = logger
    }

    /// Whether a claim could find anything: false only when no batch or job is due
    /// (`AnythingDueStatement`, one prepared statement read from the heads of the claim indexes).
    public func anythingDue() async throws -> Bool {
        try await database.execute(AnythingDueStatement(), logger: logger).first ?? true
    }

    /// Claims due batches (whole, oldest first, up to `limit` devices in all and at least one
    /// batch however large) and up to `limit` due, unexpired jobs, for `leaseSeconds`. A batch
    /// none of whose members can be sent any more is deleted here.
    public func claim(limit: Int, leaseSeconds: Int = 30) async throws -> [ClaimedJob] {
        var jobs: [ClaimedJob] = []
        // A claim that found only batches with nothing left to send claims again at once, so the
        // loop does not idle while more are due (bounded: each pass deletes what it found).
        for _ in 0..<8 {
            let (members, emptied) = try await claimBatches(limit: limit, leaseSeconds: leaseSeconds)
            jobs += members
            if !members.isEmpty || emptied == 0 { break }
        }
        jobs += try await claimJobs(limit: limit, leaseSeconds: leaseSeconds)
        return jobs
    }

    /// Claims due batches of up to `limit` devices in all for `leaseSeconds`; returns the members
    /// still to be sent, and how many batches had none left (deleted).
    ///
    /// A member whose device row this build cannot read (`PushDestination(storedPlatform:…)`) is
    /// left out, and goes with its batch.
    func claimBatches(limit: Int, leaseSeconds: Int) async throws -> (members: [ClaimedJob], emptied: Int) {
        let rows = try await database.query(ClaimBatchesQuery(limit: limit, leaseSeconds: leaseSeconds).query, logger: logger)
        var members: [ClaimedJob] = []
        var empty: [(id: Int64, attempts: Int)] = []
        for row in rows {
            var columns = RowColumns(row)
            let (id, attempts, expiresAt) = (try columns.next(Int64.self), try columns.next(Int.self), try columns.next(Date.self))
            let (type, eventID, conversationID) = (
                try columns.next(String.self), try columns.next(String.self), try columns.next(String.self)
            )
            let (emoji, postID, background) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.next(Bool.self)
            )
            let (apnsID, token, pubkey) = (
                try columns.optional(UUID.self), try columns.optional(String.self), try columns.optional(String.self)
            )
            let (environment, topic, updatedAt) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.optional(Date.self)
            )
            let (platform, pushType, p256dh, authSecret) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.optional(String.self),
                try columns.optional(String.self)
            )
            // A gift-wrap batch's member carries its own wrap, relay and count.
            let (memberEventID, relay, wrapCount) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.optional(Int.self)
            )
            // The row a batch without a member left to send carries (its members' devices are
            // gone, or the conversation was archived): nothing to send, so the batch goes.
            guard apnsID != nil else {
                empty.append((id, attempts))
                continue
            }
            guard
                let member = ClaimedJob(
                    leasedID: id, inBatch: true, apnsID: apnsID, deviceToken: token, pubkey: pubkey, environment: environment, topic: topic,
                    deviceUpdatedAt: updatedAt, attempts: attempts, expiresAt: expiresAt,
                    device: (platform, pushType, p256dh, authSecret),
                    notification: { pubkey in
                        NotificationType(rawValue: type).map {
                            APNsNotification(
                                type: $0, eventID: memberEventID ?? eventID, conversationID: conversationID, emoji: emoji, postID: postID,
                                relay: relay, count: wrapCount ?? 1, recipient: $0 == .giftWrap ? pubkey : nil, background: background)
                        }
                    })
            else { continue }
            members.append(member)
        }
        if !empty.isEmpty {
            _ = try await database.execute(
                FinishBatchesStatement(ids: empty.map(\.id), attempts: empty.map(\.attempts), retries: []), logger: logger)
        }
        return (members, empty.count)
    }

    /// Claims up to `limit` due, unexpired jobs of `push_jobs` for `leaseSeconds`.
    func claimJobs(limit: Int, leaseSeconds: Int) async throws -> [ClaimedJob] {
        let rows = try await database.query(ClaimJobsQuery(limit: limit, leaseSeconds: leaseSeconds).query, logger: logger)
        var jobs: [ClaimedJob] = []
        for row in rows {
            var columns = RowColumns(row)
            let (id, apnsID, token, pubkey) = (
                try columns.next(Int64.self), try columns.next(UUID.self), try columns.next(String.self), try columns.next(String.self)
            )
            let (environment, topic, updatedAt) = (
                try columns.optional(String.self), try columns.next(String.self), try columns.next(Date.self)
            )
            let (type, eventID, conversationID) = (
                try columns.next(String.self), try columns.next(String.self), try columns.next(String.self)
            )
            let (emoji, postID, attempts, expiresAt) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.next(Int.self),
                try columns.next(Date.self)
            )
            let (relay, wrapCount, platform, pushType) = (
                try columns.optional(String.self), try columns.next(Int.self), try columns.next(String.self), try columns.next(String.self)
            )
            let (p256dh, authSecret, background) = (
                try columns.optional(String.self), try columns.optional(String.self), try columns.next(Bool.self)
            )
            // A device row this build cannot read (see `PushDestination(storedPlatform:…)`): its
            // job is left to expire rather than fail every claim round that meets it.
            guard
                let destination = PushDestination(
                    storedPlatform: platform, address: token, environment: environment, pushType: pushType, p256dh: p256dh,
                    authSecret: authSecret),
                let type = NotificationType(rawValue: type)
            else { continue }
            jobs.append(
                ClaimedJob(
                    id: id, apnsID: apnsID, destination: destination, pubkey: pubkey, topic: topic, deviceUpdatedAt: updatedAt,
                    notification: APNsNotification(
                        type: type, eventID: eventID, conversationID: conversationID, emoji: emoji, postID: postID,
                        relay: relay, count: wrapCount, recipient: type == .giftWrap ? pubkey : nil, background: background),
                    attempts: attempts, expiresAt: expiresAt))
        }
        return jobs
    }

    /// Delivered, or dropped for good. Fenced by the attempt count: a worker whose lease ran out
    /// (and whose job was claimed again) cannot touch the newer claim.
    public func finish(_ job: ClaimedJob) async throws {
        try await database.query("DELETE FROM push_jobs WHERE id = \(job.id) AND attempts = \(job.attempts)", logger: logger)
    }

    /// Finishes many jobs, each fenced by its attempt count: the jobs in one statement, and the
    /// batches their batch members belong to in another, which also queues `retrying` (members of
    /// those batches to send again) as jobs of their own. A batch is finished as a whole: pass all
    /// of its claimed members, here or in `retrying`.
    public func finish(_ jobs: [ClaimedJob], retrying: [MemberRetry] = []) async throws {
        let single = jobs.filter { !$0.inBatch }
        if !single.isEmpty {
            _ = try await database.execute(FinishJobsStatement(ids: single.map(\.id), attempts: single.map(\.attempts)), logger: logger)
        }
        var batches: [Int64: Int] = [:]
        for job in jobs where job.inBatch { batches[job.id] = job.attempts }
        for retry in retrying where retry.member.inBatch { batches[retry.member.id] = retry.member.attempts }
        guard !batches.isEmpty else { return }
        // In id order, so two finishes never wait on each other's rows in opposite orders.
        let sorted = batches.sorted { $0.key < $1.key }
        _ = try await database.execute(
            FinishBatchesStatement(ids: sorted.map(\.key), attempts: sorted.map(\.value), retries: retrying.filter(\.member.inBatch)),
            logger: logger)
    }

    /// Back to the queue after `delaySeconds`, keeping the error for operators.
    public func reschedule(_ job: ClaimedJob, delaySeconds: Double, error: String) async throws {
        try await database.query(
            """
            UPDATE push_jobs SET next_attempt_at = now() + make_interval(secs => \(delaySeconds)), locked_until = NULL, last_error = \(error)
            WHERE id = \(job.id) AND attempts = \(job.attempts)
            """, logger: logger)
    }

    /// Removes a dead token (and with it its jobs) unless it was registered again after
    /// `notUpdatedAfter` (the job's view of the registration, or APNs's 410 timestamp if older):
    /// a newer registration is newer news than the APNs verdict.
    @discardableResult
    public func removeDevice(token: String, notUpdatedAfter: Date) async throws -> Bool {
        let logger = self.logger
        return try await database.withTransaction(logger: logger) { connection in
            var owner: String?
            for pubkey in try await connection.query(
                "DELETE FROM devices WHERE device_token = \(token) AND updated_at <= \(notUpdatedAfter) RETURNING pubkey", logger: logger
            ).decode(String.self) {
                owner = pubkey
            }
            guard let owner else { return false }
            // Archive state lives only while its pubkey has a device.
            try await GatewayStore.dropOrphanedArchive(owner, connection, logger)
            return true
        }
    }

    /// How many jobs are counted exactly at most, for each figure: past it the queue figure is
    /// PostgreSQL's live-row estimate and the due figure reads this cap.
    package static let exactCountCap = 10_000

    /// Pushes in the queue (jobs, and the devices of queued batches), how many of them are due now
    /// and how long the oldest has waited, at a cost that does not grow with the queue: each count
    /// of jobs is exact up to `exactCountCap` rows. Past the cap the jobs' figure is PostgreSQL's
    /// live-row estimate for the table (kept by its statistics, so it lags and can be off after an
    /// ANALYZE), which is good enough for a long queue; a short or drained queue, which is what
    /// alerts and operators compare against, is always counted exactly. Batches are summed by
    /// their stored size, up to `exactCountCap` batches. The oldest job or batch is the one with
    /// the lowest id (ids are handed out in queueing order), read through the primary key.
    public func depth() async throws -> QueueDepth {
        var result = QueueDepth(queued: 0, due: 0, oldestJobAgeSeconds: 0)
        for row in try await database.query(
            """
            SELECT (SELECT count(*) FROM (SELECT 1 FROM push_jobs LIMIT \(Self.exactCountCap)) queued)::int,
                   coalesce((SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = 'push_jobs'::regclass), 0)::int,
                   (SELECT count(*) FROM (SELECT 1 FROM push_jobs WHERE next_attempt_at <= now() LIMIT \(Self.exactCountCap)) due)::int,
                   coalesce((SELECT sum(size) FROM (SELECT size FROM push_batches LIMIT \(Self.exactCountCap)) b), 0)::int,
                   coalesce((SELECT sum(size) FROM (SELECT size FROM push_batches WHERE next_attempt_at <= now()
                                                    LIMIT \(Self.exactCountCap)) b), 0)::int,
                   greatest(0, coalesce((SELECT extract(epoch FROM clock_timestamp() - created_at) FROM push_jobs ORDER BY id LIMIT 1), 0),
                            coalesce((SELECT extract(epoch FROM clock_timestamp() - created_at) FROM push_batches ORDER BY id LIMIT 1), 0))::float8
            """, logger: logger
        ).decode((Int, Int, Int, Int, Int, Double).self) {
            let (counted, estimated, due, batched, batchedDue, oldest) = row
            result = QueueDepth(
                queued: (counted < Self.exactCountCap ? counted : max(counted, estimated)) + batched, due: due + batchedDue,
                oldestJobAgeSeconds: max(0, oldest))
        }
        return result
    }

    /// Deletes jobs, and batches, past their expiry; returns how many pushes went.
    @discardableResult
    public func dropExpired() async throws -> Int {
        let jobs = try await database.query("DELETE FROM push_jobs WHERE expires_at <= now() RETURNING 1", logger: logger).count
        var members = 0
        for size in try await database.query("DELETE FROM push_batches WHERE expires_at <= now() RETURNING size", logger: logger)
            .decode(Int.self)
        {
            members += size
        }
        return jobs + members
    }
}
