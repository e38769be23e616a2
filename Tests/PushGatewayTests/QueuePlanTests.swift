import Foundation
import PostgresNIO
@testable import PushGateway
import Testing

/// The queue's statements keep reading jobs by key when PostgreSQL's statistics say the queue is
/// empty. The queue drains between bursts; an autovacuum that catches it empty records one row
/// in a table still hundreds of pages long, and a statement planned on those figures may read
/// the whole table (or a whole index, dead entries and all) for every call until the next
/// ANALYZE. The watcher benchmark saw that as finish deletes of 0.5–1 s and a 50 s backlog.
@Suite(.serialized) struct QueuePlanTests {
    /// The one device every job of these tests belongs to.
    static let token = GatewayHarness.token(7)
    static let pubkey = String(repeating: "ab", count: 32)

    /// A queue in that state: a burst's worth of jobs queued and gone but one, vacuumed and
    /// analyzed (one row in the statistics), then a new burst the statistics know nothing of.
    /// Returns the new burst's (id, attempts).
    static func drainedThenBusy(_ client: PostgresClient) async throws -> [(Int64, Int)] {
        let (token, pubkey) = (Self.token, Self.pubkey)
        try await client.query("""
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch) VALUES (\(token), \(pubkey), 'sandbox', 'app.test', true)
            """, logger: TestDatabase.logger)
        func burst(_ count: Int) async throws {
            try await client.query("""
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, next_attempt_at,
                                       expires_at, locked_until, attempts, direct)
                SELECT gen_random_uuid(), \(token), \(pubkey), 'gift_wrap', md5(i::text), '', 'ws://relay', now() + interval '30 seconds',
                       now() + interval '1 day', now() + interval '30 seconds', 1, true
                FROM generate_series(1, \(count)) AS i
                """, logger: TestDatabase.logger)
        }
        // The test sets the statistics itself: an autovacuum of its own in between would undo them.
        try await client.query("ALTER TABLE push_jobs SET (autovacuum_enabled = off)", logger: TestDatabase.logger)
        try await burst(20_000)
        try await client.query("DELETE FROM push_jobs WHERE id < (SELECT max(id) FROM push_jobs)", logger: TestDatabase.logger)
        try await client.query("VACUUM ANALYZE push_jobs", logger: TestDatabase.logger)
        try await burst(300)
        var jobs: [(Int64, Int)] = []
        for try await (id, attempts) in try await client.query("SELECT id, attempts FROM push_jobs ORDER BY id DESC LIMIT 300", logger: TestDatabase.logger)
            .decode((Int64, Int).self) {
            jobs.append((id, attempts))
        }
        return jobs
    }

    /// The generic plan (what a prepared statement settles on) of `sql` with `arguments`.
    static func genericPlan(_ client: PostgresClient, _ sql: String, types: String, arguments: String) async throws -> String {
        try await client.withConnection { connection in
            try await connection.query("SET plan_cache_mode = force_generic_plan", logger: TestDatabase.logger)
            try await connection.query(PostgresQuery(unsafeSQL: "PREPARE planned(\(types)) AS \(sql)"), logger: TestDatabase.logger)
            // The connection goes back to the pool as it came, whatever happens.
            // (Not DISCARD ALL: it would also drop statements PostgresNIO prepared on it.)
            func reset() async throws {
                try await connection.query("DEALLOCATE planned", logger: TestDatabase.logger)
                try await connection.query("RESET plan_cache_mode", logger: TestDatabase.logger)
            }
            do {
                var lines: [String] = []
                for try await line in try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE planned(\(arguments))"), logger: TestDatabase.logger)
                    .decode(String.self) {
                    lines.append(line)
                }
                try await reset()
                return lines.joined(separator: "\n")
            } catch {
                try? await reset()
                throw error
            }
        }
    }

    /// Migration 0010: an index whose second column is `id` was planned for look-ups by id alone
    /// (a read of the whole index) in the state above; only the primary key may hold `id`.
    @Test func theClaimIndexIsKeyedByTimeAlone() async throws {
        try await TestDatabase.with { _, client in
            // Indexes with `id` among their key columns (not merely included), from the catalog.
            let holdingID = try await TestDatabase.rows(client, """
                SELECT i.indexrelid::regclass::text AS name FROM pg_index i
                WHERE i.indrelid = 'push_jobs'::regclass
                  AND (SELECT attnum FROM pg_attribute WHERE attrelid = 'push_jobs'::regclass AND attname = 'id') = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1])
                """)
            #expect(holdingID == [#"{"name":"push_jobs_pkey"}"#], "only the primary key has id as a key column: \(holdingID)")
            let claim = try await TestDatabase.rows(client, "SELECT indexdef FROM pg_indexes WHERE indexname = 'push_jobs_claim_idx'")
            #expect(claim.count == 1 && claim[0].contains("(next_attempt_at)"), "\(claim)")
        }
    }

    @Test func finishingJobsReadsThemByKeyWhenTheStatisticsSayTheQueueIsEmpty() async throws {
        try await TestDatabase.with { _, client in
            let jobs = try await Self.drainedThenBusy(client)
            #expect(jobs.count == 300)
            // The state this test is about: one row on record, hundreds of pages on disk.
            let (tuples, pages) = try await client.query("SELECT reltuples::float8, relpages FROM pg_class WHERE relname = 'push_jobs'",
                                                         logger: TestDatabase.logger).collect()[0].decode((Double, Int32).self)
            try #require(tuples <= 1, "autovacuum's view of a drained queue")
            try #require(pages > 100)

            let ids = jobs.map { String($0.0) }.joined(separator: ",")
            let attempts = jobs.map { String($0.1) }.joined(separator: ",")
            let plan = try await Self.genericPlan(client, FinishJobsStatement.sql, types: "bigint[], int[]",
                                                  arguments: "'{\(ids)}', '{\(attempts)}'")
            #expect(plan.contains("Index Cond: (id = ANY") && plan.contains("push_jobs_pkey"), "jobs probed by primary key:\n\(plan)")
            #expect(!plan.contains("Seq Scan on push_jobs"), "no scan of the whole queue:\n\(plan)")

            // And the statement does its work in that state.
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            try await queue.finish(jobs.map { job in
                ClaimedJob(id: job.0, apnsID: UUID(), deviceToken: Self.token, pubkey: Self.pubkey,
                           environment: .sandbox, topic: "app.test", deviceUpdatedAt: Date(),
                           notification: .giftWrap(wrapID: "w", relay: "ws://relay", count: 1, recipient: Self.pubkey),
                           attempts: job.1, expiresAt: Date().addingTimeInterval(3600))
            })
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 1, "the burst deleted, the old job left")
        }
    }
}
