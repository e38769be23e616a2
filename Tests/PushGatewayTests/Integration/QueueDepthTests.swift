import PostgresNIO
import PushGateway
import Testing

/// The queue gauges (`linkstr_queue_jobs`) read `DeliveryQueue.depth()`: exact while the queue is
/// short, whatever PostgreSQL's statistics say, and bounded in cost when it is long.
@Suite struct QueueDepthTests {
    static let token = GatewayHarness.token(9)
    static let pubkey = String(repeating: "cd", count: 32)

    /// Inserts `count` jobs and has the inserting backend report them to the statistics at once:
    /// left pending (up to 10 s when the backend goes idle), they would land after a later
    /// ANALYZE and add to its count.
    static func insertJobs(_ client: PostgresClient, count: Int, dueIn seconds: Int) async throws {
        let (token, pubkey) = (Self.token, Self.pubkey)
        try await client.withConnection { connection in
            try await connection.query(
                """
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, next_attempt_at, expires_at)
                SELECT gen_random_uuid(), \(token), \(pubkey), 'gift_wrap', md5(i::text), '', 'ws://relay',
                       now() + make_interval(secs => \(seconds)), now() + interval '1 day'
                FROM generate_series(1, \(count)) AS i
                """, logger: TestDatabase.logger)
            try await connection.query("SELECT pg_stat_force_next_flush()", logger: TestDatabase.logger)
        }
    }

    /// Waits until the statistics have every insert so far: nothing pending can move the
    /// estimate between two reads of it.
    static func awaitInsertsCounted(_ client: PostgresClient, _ count: Int) async throws {
        let counted = try await GatewayHarness.eventually(within: 30) {
            try await TestDatabase.count(client, "SELECT n_tup_ins::int FROM pg_stat_user_tables WHERE relname = 'push_jobs'") >= count
        }
        try #require(counted, "the statistics never counted \(count) inserts")
    }

    /// A drained queue reads 0 at once, even while the statistics still hold the rows it had.
    @Test func aDrainedQueueReadsZeroBeforeTheStatisticsCatchUp() async throws {
        try await TestDatabase.with { _, client in
            try await client.query("ALTER TABLE push_jobs SET (autovacuum_enabled = off)", logger: TestDatabase.logger)
            try await Self.insertJobs(client, count: 5, dueIn: 0)
            try await Self.insertJobs(client, count: 2, dueIn: 3600)
            try await client.query("ANALYZE push_jobs", logger: TestDatabase.logger)
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let full = try await queue.depth()
            #expect(full.queued == 7 && full.due == 5)
            try await client.query("DELETE FROM push_jobs", logger: TestDatabase.logger)
            let estimate = try await TestDatabase.count(
                client, "SELECT n_live_tup::int FROM pg_stat_user_tables WHERE relname = 'push_jobs'")
            let drained = try await queue.depth()
            #expect(drained.queued == 0 && drained.due == 0, "statistics said \(estimate)")
        }
    }

    /// Past the cap each figure stops counting: the queue reads the statistics' estimate and the
    /// due figure reads the cap, so a scrape costs the same however long the queue grows.
    @Test func aQueuePastTheCapReadsTheEstimate() async throws {
        try await TestDatabase.with { _, client in
            let cap = DeliveryQueue.exactCountCap
            try await Self.insertJobs(client, count: cap + 40, dueIn: 0)
            try await Self.insertJobs(client, count: 10, dueIn: 3600)
            try await Self.awaitInsertsCounted(client, cap + 50)
            try await client.query("ANALYZE push_jobs", logger: TestDatabase.logger)
            let estimate = try await TestDatabase.count(
                client, "SELECT n_live_tup::int FROM pg_stat_user_tables WHERE relname = 'push_jobs'")
            let depth = try await DeliveryQueue(client: client, logger: TestDatabase.logger).depth()
            #expect(depth.due == cap)
            #expect(depth.queued == max(cap, estimate))
            #expect(depth.queued > cap, "ANALYZE counted \(estimate) rows")
        }
    }
}
