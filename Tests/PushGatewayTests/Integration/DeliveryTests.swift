import Foundation
import GatewayWire
import HTTPTypes
import Logging
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import Testing

/// Queue and worker against a real PostgreSQL. APNs answers come from a scripted sender here;
/// the HTTP/2 path against the APNs sandbox is tested with the sender that speaks it.
@Suite(.serialized) struct DeliveryTests {
    /// Seeds devices and jobs through the real API store.
    /// Ends every lease now, as its running out would (the worker holding it "died"). Leases in
    /// these tests are long, so that nothing lapses between two steps on a busy machine.
    static func expireLeases(_ client: PostgresClient) async throws {
        try await client.query(
            """
            UPDATE push_jobs SET locked_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second'
            WHERE locked_until > now()
            """, logger: TestDatabase.logger)
        try await client.query(
            "UPDATE push_batches SET next_attempt_at = now() - interval '1 second' WHERE attempts > 0 AND next_attempt_at > now()",
            logger: TestDatabase.logger)
    }

    static func seed(_ client: PostgresClient, devices: [(token: String, pubkey: String)], jobsPerDevice: Int = 1) async throws {
        for device in devices {
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic) VALUES (\(device.token), \(device.pubkey), 'sandbox', 'app.test')
                """, logger: TestDatabase.logger)
            for index in 0..<jobsPerDevice {
                let event = "ev-\(index)"
                try await client.query(
                    """
                    INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, expires_at)
                    VALUES (gen_random_uuid(), \(device.token), \(device.pubkey), 'new_post', \(event), 'C1', now() + interval '15 minutes')
                    """, logger: TestDatabase.logger)
            }
        }
    }

    static func devices(_ count: Int) -> [(token: String, pubkey: String)] {
        (0..<count).map { (GatewayHarness.token(UInt8($0 + 1)), Keys.generate().publicKey.hex) }
    }

    final class ScriptedSender: PushSender {
        let answers: @Sendable (ClaimedJob) -> PushSendResult
        let sent = Mutex<[ClaimedJob]>([])
        init(answers: @escaping @Sendable (ClaimedJob) -> PushSendResult) { self.answers = answers }
        func send(_ job: ClaimedJob) async -> PushSendResult {
            sent.withLock { $0.append(job) }
            return answers(job)
        }
    }

    @Test func concurrentClaimersNeverShareAJob() async throws {
        try await TestDatabase.with { url, client in
            try await Self.seed(client, devices: Self.devices(10), jobsPerDevice: 10)
            let other = GatewayApplication.postgresClient(url, logger: TestDatabase.logger)
            let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
                group.addTask {
                    await other.run()
                    return []
                }
                let a = DeliveryQueue(client: client, logger: TestDatabase.logger)
                let b = DeliveryQueue(client: other, logger: TestDatabase.logger)
                async let first = [a.claim(limit: 30), a.claim(limit: 30), a.claim(limit: 30)]
                async let second = [b.claim(limit: 30), b.claim(limit: 30), b.claim(limit: 30)]
                let all = try await (first + second).flatMap { $0.map(\.id) }
                group.cancelAll()
                return all
            }
            #expect(claimed.count == 100, "every job claimed once")
            #expect(Set(claimed).count == claimed.count, "no job claimed twice")
        }
    }

    /// The gateway's sessions run without JIT: with tens of thousands of devices, the generic
    /// plans' estimates passed its thresholds and every 500-recipient push compiled for seconds.
    @Test func theGatewaysSessionsRunWithoutJIT() async throws {
        try await TestDatabase.with { url, _ in
            let client = GatewayApplication.postgresClient(url, logger: TestDatabase.logger)
            let settings = try await withThrowingTaskGroup(of: [String].self) { group in
                group.addTask {
                    await client.run()
                    return []
                }
                let rows = try await Database(client).query("SELECT current_setting('jit')", logger: TestDatabase.logger)
                group.cancelAll()
                return try rows.decode((String).self)
            }
            #expect(settings == ["off"])
        }
    }

    @Test func aLostLeaseIsClaimedAgainWithTheSameAPNsID() async throws {
        try await TestDatabase.with { _, client in
            try await Self.seed(client, devices: Self.devices(1))
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let first = try #require(try await queue.claim(limit: 10, leaseSeconds: 60).first)
            #expect(try await queue.claim(limit: 10).isEmpty, "leased")
            try await Self.expireLeases(client) // the worker "died"; its lease runs out
            let again = try #require(try await queue.claim(limit: 10).first)
            #expect(again.id == first.id && again.apnsID == first.apnsID)
            #expect(again.attempts == 2)
            #expect(again.notification == APNsNotification(type: .newPost, eventID: "ev-0", conversationID: "C1"))
        }
    }

    @Test func racedJobsAreNeverSentAndStaleWorkersAreFenced() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(3)
            try await Self.seed(client, devices: devices)
            // Device 0 moved to another pubkey and device 1's owner archived C1 while their jobs
            // were being queued (the races the API's own cancellation cannot see).
            try await client.query(
                "UPDATE devices SET pubkey = \(Keys.generate().publicKey.hex) WHERE device_token = \(devices[0].token)",
                logger: TestDatabase.logger)
            try await client.query("INSERT INTO archived_conversations VALUES (\(devices[1].pubkey), 'C1')", logger: TestDatabase.logger)
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10, leaseSeconds: 60)
            #expect(claimed.map(\.deviceToken) == [devices[2].token])
            #expect(
                try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 1,
                "raced jobs are deleted, not left to expire")

            // A worker whose lease ran out cannot finish the job someone else now holds.
            let stale = try #require(claimed.first)
            try await Self.expireLeases(client)
            let fresh = try #require(try await queue.claim(limit: 10).first)
            try await queue.finish(stale)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs WHERE id = \(fresh.id)") == 1)
            try await queue.finish(fresh)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs WHERE id = \(fresh.id)") == 0)
        }
    }

    /// push_jobs has no foreign key on its device since migration 0008: a device's jobs still go
    /// with it (a trigger), and a job queued for a device deleted in the same instant (which the
    /// key used to refuse, failing the whole batch) is dropped by the claim, never sent.
    @Test func aDevicesJobsGoWithItAndAJobLeftByARaceIsDroppedUnsent() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(3)
            try await Self.seed(client, devices: devices, jobsPerDevice: 2)
            try await client.query("DELETE FROM devices WHERE device_token = \(devices[0].token)", logger: TestDatabase.logger)
            #expect(
                try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs WHERE device_token = '\(devices[0].token)'") == 0)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 4, "the other devices' jobs stay")

            // The race: a batch read the device before its deletion committed and queued after.
            try await client.query(
                """
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, expires_at)
                VALUES (gen_random_uuid(), \(devices[0].token), \(devices[0].pubkey), 'new_post', 'late', 'C1', now() + interval '15 minutes')
                """, logger: TestDatabase.logger)
            let claimed = try await DeliveryQueue(client: client, logger: TestDatabase.logger).claim(limit: 10)
            #expect(Set(claimed.map(\.deviceToken)) == [devices[1].token, devices[2].token] && claimed.count == 4)
            #expect(
                try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs WHERE device_token = '\(devices[0].token)'") == 0,
                "deleted by the claim, not left to expire")
        }
    }

    /// A job queued already leased for direct delivery is not in the device index (migration
    /// 0009), so its device's removal leaves it while it is in flight; if it comes back (a retry,
    /// or its instance died and the lease ran out), the claim drops it unsent.
    @Test func aDirectJobWhoseDeviceWentIsDroppedWhenItComesBack() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(2)
            try await Self.seed(client, devices: devices, jobsPerDevice: 0)
            for device in devices {
                try await client.query(
                    """
                    INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, expires_at,
                                           next_attempt_at, locked_until, attempts, direct)
                    VALUES (gen_random_uuid(), \(device.token), \(device.pubkey), 'new_post', 'ev', 'C1', now() + interval '15 minutes',
                            now() + interval '60 seconds', now() + interval '60 seconds', 1, true)
                    """, logger: TestDatabase.logger)
            }
            try await client.query("DELETE FROM devices WHERE device_token = \(devices[0].token)", logger: TestDatabase.logger)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 2, "in flight: left to its sender")

            // Both leases run out, as when the instance sending them dies.
            try await Self.expireLeases(client)
            let claimed = try await DeliveryQueue(client: client, logger: TestDatabase.logger).claim(limit: 10)
            #expect(claimed.map(\.deviceToken) == [devices[1].token], "only the job whose device is still there is sent")
            #expect(
                try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs WHERE device_token = '\(devices[0].token)'") == 0,
                "the orphan is deleted by the claim")
        }
    }

    @Test func workerAppliesEveryOutcome() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(6)
            try await Self.seed(client, devices: devices)
            // Device 3 was re-registered after the 410 timestamp APNs will report for it.
            let longAgo = Int64(Date().addingTimeInterval(-3600).timeIntervalSince1970 * 1000)
            let answers: [String: PushSendResult] = [
                devices[0].token: PushSendResult.apns(status: 200),
                devices[1].token: PushSendResult.apns(status: 400, reason: "BadDeviceToken"),
                devices[2].token: PushSendResult.apns(
                    status: 410, reason: "Unregistered", timestampMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 1000),
                devices[3].token: PushSendResult.apns(status: 410, reason: "Unregistered", timestampMilliseconds: longAgo),
                devices[4].token: PushSendResult.apns(status: 500, reason: "InternalServerError"),
                devices[5].token: PushSendResult.apns(status: 400, reason: "BadCollapseId"),
            ]
            let sender = ScriptedSender { answers[$0.deviceToken]! }
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            var worker = DeliveryWorker(queue: queue, sender: sender, logger: TestDatabase.logger)
            // A 60 s first backoff instead of 2 s: a loaded machine must not make the retry due
            // before the checks below run.
            worker.retryPolicy.baseSeconds = 60
            let sentAt = Date()
            #expect(try await worker.runOnce() == 6)
            #expect(sender.sent.withLock { $0.count } == 6)

            func exists(_ table: String, _ token: String) async throws -> Bool {
                try await TestDatabase.count(client, "SELECT count(*)::int FROM \(table) WHERE device_token = '\(token)'") > 0
            }
            #expect(try await !exists("push_jobs", devices[0].token), "delivered")
            #expect(try await !exists("devices", devices[1].token), "BadDeviceToken removes the device")
            #expect(try await !exists("devices", devices[2].token), "410 after registration removes it")
            #expect(try await exists("devices", devices[3].token), "re-registered after the 410 timestamp: kept")
            #expect(try await !exists("push_jobs", devices[3].token))
            #expect(try await exists("push_jobs", devices[4].token), "500 is retried")
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT count(*)::int FROM push_jobs WHERE device_token = '\(devices[4].token)' AND last_error = 'InternalServerError'
                    AND locked_until IS NULL AND next_attempt_at BETWEEN to_timestamp(\(sentAt.timeIntervalSince1970 + 59.5)) AND now() + interval '72 seconds'
                    """) == 1, "backs off the first delay plus up to 20 % jitter")
            #expect(try await !exists("push_jobs", devices[5].token), "sender bugs are dropped, not retried")
            #expect(try await worker.runOnce() == 0, "nothing else is due yet")
        }
    }

    /// A background push queued for the claim loops comes back from the claim still a background
    /// push, and a leased one as well.
    @Test func aBackgroundPushKeepsItsKindThroughTheQueue() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(1)
            try await Self.seed(client, devices: devices, jobsPerDevice: 0)
            for lease in [nil, 30] as [Int?] {
                let rows = try await Database(client).execute(
                    EnqueuePushStatement(
                        sender: Keys.generate().publicKey.hex, replayKey: "key-bg-\(lease ?? 0)",
                        replayExpires: Date().addingTimeInterval(600),
                        recipients: devices.map(\.pubkey), eventID: "ev-bg-\(lease ?? 0)", notificationType: .newMessage,
                        conversationID: "C1",
                        lifetimeSeconds: 900, skipRelayWatchDevices: false, leaseSeconds: lease, background: true),
                    logger: TestDatabase.logger)
                let job =
                    if lease == nil { try await DeliveryQueue(client: client, logger: TestDatabase.logger).claim(limit: 10).first } else {
                        rows.compactMap(\.leased).first
                    }
                #expect(job?.notification.background == true, "lease \(lease.map(String.init) ?? "none")")
                #expect(job?.notification.headers(topic: "t", expiration: 0).contains { $0 == ("apns-priority", "5") } == true)
            }
        }
    }

    /// `POST /v1/push` with direct delivery: the jobs come back leased to the instance that queued
    /// them, stay out of every claim (their next_attempt_at is the lease's end, so the claim's
    /// index scan stops before them) and, if that instance dies, are anyone's once the lease ends.
    @Test func aPushQueuedLeasedIsClaimedByNobodyUntilItsLeaseRunsOut() async throws {
        try await TestDatabase.with { _, client in
            let devices = Self.devices(2)
            try await Self.seed(client, devices: devices, jobsPerDevice: 0)
            let database = Database(client)
            func enqueue(_ event: String, lease: Int?) async throws -> [EnqueuePushStatement.Row] {
                try await database.execute(
                    EnqueuePushStatement(
                        sender: Keys.generate().publicKey.hex, replayKey: "key-\(event)", replayExpires: Date().addingTimeInterval(600),
                        recipients: devices.map(\.pubkey), eventID: event, notificationType: .newPost, conversationID: "C1", emoji: nil,
                        postID: nil,
                        lifetimeSeconds: 900, skipRelayWatchDevices: false, leaseSeconds: lease), logger: TestDatabase.logger)
            }
            let rows = try await enqueue("ev-direct", lease: 60)
            let leased = rows.compactMap(\.leased)
            #expect(rows.allSatisfy { $0.fresh && $0.recipients == 2 && $0.jobs == 2 })
            #expect(Set(leased.map(\.deviceToken)) == Set(devices.map(\.token)))
            #expect(
                leased.allSatisfy {
                    $0.attempts == 1 && $0.topic == "app.test" && $0.environment == .sandbox
                        && $0.notification == APNsNotification(type: .newPost, eventID: "ev-direct", conversationID: "C1")
                })
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT count(*)::int FROM push_queue WHERE attempts = 1 AND next_attempt_at = locked_until AND next_attempt_at > now()
                    """) == 2, "due when the lease ends")
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            #expect(try await queue.claim(limit: 10).isEmpty, "leased to the instance that queued them")

            try await Self.expireLeases(client) // that instance "died"; the lease runs out
            let again = try await queue.claim(limit: 10)
            #expect(Set(again.map(\.apnsID)) == Set(leased.map(\.apnsID)), "the same jobs, the same apns-id")
            #expect(again.allSatisfy { $0.attempts == 2 })

            // Without a lease the jobs are queued due now, for the delivery loops.
            let queued = try await enqueue("ev-queued", lease: nil)
            #expect(queued.count == 1 && queued[0].leased == nil && queued[0].jobs == 2)
            #expect(try await queue.claim(limit: 10).count == 2)
        }
    }

    @Test func directDeliveryStopsLeasingAtItsLimitAndResumesWhenSendsFinish() async throws {
        let open = Atomic(false)
        let sent = Mutex(0)
        let direct = DirectDelivery(leaseSeconds: 30, limit: 3) { jobs in
            while !open.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
            sent.withLock { $0 += jobs.count }
        }
        let job = ClaimedJob(
            id: 1, apnsID: UUID(), deviceToken: GatewayHarness.token(1), pubkey: Keys.generate().publicKey.hex, environment: .sandbox,
            topic: "app.test", deviceUpdatedAt: Date(), notification: APNsNotification(type: .newPost, eventID: "e", conversationID: "C"),
            attempts: 1, expiresAt: Date().addingTimeInterval(900))
        #expect(direct.lease() == 30)
        direct.start([job, job])
        #expect(direct.lease() == 30, "2 of 3 in flight")
        direct.start([job])
        #expect(direct.lease() == nil, "at the limit new jobs wait in the queue")
        #expect(direct.pending == 3)
        open.store(true, ordering: .relaxed)
        for _ in 0..<100 where direct.pending > 0 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(direct.pending == 0)
        #expect(sent.withLock { $0 } == 3)
        #expect(direct.lease() == 30)
        await direct.drain()
    }

    @Test func queuedPushesDrainThroughTheRunningGateway() async throws {
        try await GatewayHarness.run(deliver: true) { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x90)))
            let body = ArchiveAndPushTests.pushBody(to: [bob])
            #expect(try await gateway.send(alice, .post, "/v1/push", json: body).json?["candidate_devices"] == 1)
            // The gateway runs with APNS_DISABLE semantics: its worker logs and finishes the job.
            var remaining = 1
            for _ in 0..<50 where remaining > 0 {
                try await Task.sleep(for: .milliseconds(100))
                remaining = try await gateway.count("SELECT count(*)::int FROM push_queue")
            }
            #expect(remaining == 0)
        }
    }
}
