import Foundation
import GatewayWire
import PostgresNIO
import PushGateway
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

    /// A queue in that state: a burst's worth of jobs (direct and queued ones, so that every
    /// index holds dead entries) gone but one, vacuumed and analyzed (one row in the statistics),
    /// then a new burst the statistics know nothing of. Returns the new burst's (id, attempts).
    static func drainedThenBusy(_ client: PostgresClient) async throws -> [(Int64, Int)] {
        let (token, pubkey) = (Self.token, Self.pubkey)
        try await client.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch) VALUES (\(token), \(pubkey), 'sandbox', 'app.test', true)
            """, logger: TestDatabase.logger)
        func burst(_ count: Int) async throws {
            try await client.query(
                """
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, next_attempt_at,
                                       expires_at, locked_until, attempts, direct)
                SELECT gen_random_uuid(), \(token), \(pubkey), 'gift_wrap', md5(i::text), '', 'ws://relay', now() + interval '30 seconds',
                       now() + interval '1 day', now() + interval '30 seconds', 1, i % 2 = 0
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
        for try await (id, attempts) in try await client.query(
            "SELECT id, attempts FROM push_jobs ORDER BY id DESC LIMIT 300", logger: TestDatabase.logger
        )
        .decode((Int64, Int).self) {
            jobs.append((id, attempts))
        }
        // The state these tests are about: one row on record, hundreds of pages on disk.
        let (tuples, pages) = try await client.query(
            "SELECT reltuples::float8, relpages FROM pg_class WHERE relname = 'push_jobs'",
            logger: TestDatabase.logger
        ).collect()[0].decode((Double, Int32).self)
        try #require(tuples <= 1, "autovacuum's view of a drained queue")
        try #require(pages > 100)
        return jobs
    }

    /// How PostgreSQL plans a prepared statement: a generic plan (the one it settles on after five
    /// calls when that looks no worse) or a custom plan for the values at hand (every unnamed
    /// statement, and a prepared one's first calls).
    enum PlanMode: String, CaseIterable, Sendable {
        case generic = "force_generic_plan"
        case custom = "force_custom_plan"
    }

    /// The plan of `sql` with `arguments` (SQL literals) in `mode`, as EXPLAIN's JSON. With
    /// `nestedLoops` off, the plan PostgreSQL makes when it prefers hash and merge joins (as it
    /// does when it expects many rows on each side). With `executed`, the statement is run (in a
    /// transaction rolled back after) and the plan carries each node's actual rows and loops.
    static func plan(
        _ client: PostgresClient, _ sql: String, types: String, arguments: String, mode: PlanMode, nestedLoops: Bool = true,
        executed: Bool = false
    ) async throws -> Any {
        try await client.withConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "SET plan_cache_mode = \(mode.rawValue)"), logger: TestDatabase.logger)
            if !nestedLoops { try await connection.query("SET enable_nestloop = off", logger: TestDatabase.logger) }
            try await connection.query(PostgresQuery(unsafeSQL: "PREPARE planned(\(types)) AS \(sql)"), logger: TestDatabase.logger)
            if executed { try await connection.query("BEGIN", logger: TestDatabase.logger) }
            // The connection goes back to the pool as it came, whatever happens.
            // (Not DISCARD ALL: it would also drop statements PostgresNIO prepared on it.)
            func reset() async throws {
                if executed { try await connection.query("ROLLBACK", logger: TestDatabase.logger) }
                try await connection.query("DEALLOCATE planned", logger: TestDatabase.logger)
                try await connection.query("RESET plan_cache_mode", logger: TestDatabase.logger)
                try await connection.query("RESET enable_nestloop", logger: TestDatabase.logger)
            }
            let options = executed ? "ANALYZE, TIMING OFF, FORMAT JSON" : "FORMAT JSON"
            do {
                var json = ByteBuffer()
                for try await text in try await connection.query(
                    PostgresQuery(unsafeSQL: "EXPLAIN (\(options)) EXECUTE planned(\(arguments))"),
                    logger: TestDatabase.logger
                ).decode(ByteBuffer.self) {
                    json = text
                }
                try await reset()
                return try JSONSerialization.jsonObject(with: Data(json.readableBytesView))
            } catch {
                try? await reset()
                throw error
            }
        }
    }

    /// How a plan reads `tables`: each index read with its condition, and every read that takes
    /// no key (a sequential scan, or an index walked end to end).
    struct TableReads: CustomStringConvertible {
        let tables: Set<String>
        var keyed: [(index: String, condition: String)] = []
        var unkeyed: [String] = []

        init(plan: Any, tables: Set<String> = ["push_jobs"]) {
            self.tables = tables
            visit(plan)
        }

        private mutating func visit(_ value: Any) {
            if let list = value as? [Any] {
                for item in list { visit(item) }
                return
            }
            guard let node = value as? [String: Any] else { return }
            if let inner = node["Plan"] {
                visit(inner)
                return
            }
            let type = node["Node Type"] as? String ?? "?"
            let index = node["Index Name"] as? String
            let table = (node["Relation Name"] as? String) ?? tables.first { index?.hasPrefix("\($0)_") == true }
            if let table, tables.contains(table) {
                switch type {
                case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
                    if let condition = node["Index Cond"] as? String {
                        keyed.append((index ?? "?", condition))
                    } else {
                        unkeyed.append("\(type) using \(index ?? "?") without a condition")
                    }
                case "Bitmap Heap Scan", "ModifyTable":
                    break // reads through its children / writes the rows its children found
                default:
                    unkeyed.append("\(type) on \(table)")
                }
            }
            for plan in node["Plans"] as? [Any] ?? [] { visit(plan) }
        }

        var description: String {
            (keyed.map { "\($0.index): \($0.condition)" } + unkeyed).joined(separator: "; ")
        }
    }

    /// A statement that reads jobs, with arguments for the burst's jobs and the reads of
    /// push_jobs its plan must make: (index, the key column its condition names), in any order.
    struct QueueStatement: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: String
        let types: String
        let arguments: @Sendable (_ jobs: [(Int64, Int)]) -> String
        let reads: [ExpectedRead]

        var testDescription: String { name }

        struct ExpectedRead: Sendable, Equatable, Comparable, CustomStringConvertible {
            var index: String
            var column: String
            static func < (a: Self, b: Self) -> Bool { (a.index, a.column) < (b.index, b.column) }
            var description: String { "\(index) by \(column)" }
        }

        static let pkey = ExpectedRead(index: "push_jobs_pkey", column: "id")
        static let queuedByDevice = ExpectedRead(index: "push_jobs_queued_device_idx", column: "device_token")

        static func literal(_ values: [String]) -> String { "'{\(values.joined(separator: ","))}'" }

        static let all: [QueueStatement] = [
            QueueStatement(
                name: "finishing jobs", sql: FinishJobsStatement.sql, types: "bigint[], int[]",
                arguments: { jobs in
                    "\(literal(jobs.map { String($0.0) })), \(literal(jobs.map { String($0.1) }))"
                }, reads: [pkey]),
            // The head of the queue by due time, then the raced delete and the lease update by id.
            QueueStatement(
                name: "claiming jobs", sql: ClaimJobsQuery.sql, types: "bigint, bigint", arguments: { _ in "100, 30" },
                reads: [ExpectedRead(index: "push_jobs_claim_idx", column: "next_attempt_at"), pkey, pkey]),
            // The merge into a device's queued job.
            QueueStatement(
                name: "recording wraps", sql: RecordWrapsStatement.sql,
                types: "text[], text[], text[], bool[], float8, float8, bool, float8, bool[], float8, bool, float8, float8",
                arguments: { _ in
                    "'{w1}', \(literal([QueuePlanTests.pubkey])), '{ws://relay}', '{true}', 60, 86400, true, 30, '{true}', 300, true, 10, 0.1667"
                }, reads: [queuedByDevice]),
            // The inbox's store runs the same steps on the wraps it stores: the targets with a
            // queued job found by device, then their jobs updated, read by device again.
            QueueStatement(
                name: "storing inbox wraps", sql: StoreInboxWrapsStatement.sql,
                types: "text[], text[], bigint[], text[], bigint, text, bigint, bool, text, float8, float8, float8, bool, float8, bool, "
                    + "float8, float8, bigint",
                arguments: { _ in
                    "'{w1}', \(literal([QueuePlanTests.pubkey])), '{1}', '{x}', 2000, 'linkstr_inbox', 8388608, true, 'ws://inbox', 300, 60, 86400, "
                        + "true, 30, true, 10, 0.1667, 60"
                }, reads: [queuedByDevice, queuedByDevice]),
            // A moved token's queued jobs.
            QueueStatement(
                name: "registering devices", sql: RegisterDevicesStatement.sql,
                types: "text[], text[], timestamptz[], text[], text[], text[], bool[], text[], text[], text[], text[], text[]",
                arguments: { _ in
                    "\(literal([String(repeating: "cd", count: 32)])), '{replay}', '{2030-01-01T00:00:00Z}', \(literal([QueuePlanTests.token])), "
                        + "'{sandbox}', '{app.test}', '{true}', '{\"wss://inbox.example wss://dm.example\"}', '{apns}', '{alert}', '{\"\"}', '{\"\"}'"
                }, reads: [queuedByDevice]),
            QueueStatement(
                name: "archiving conversations", sql: ArchivedJobsDeletion.sql, types: "text, text[]",
                arguments: { _ in
                    "'\(QueuePlanTests.pubkey)', '{c1,c2}'"
                }, reads: [queuedByDevice]),
            // Batches of typed pushes never read push_jobs; `BatchStatement` checks their reads
            // of push_batches, and DevicePlanTests their members' device look-ups.
            QueueStatement(
                name: "claiming batches", sql: ClaimBatchesQuery.sql, types: BatchStatement.claim.types,
                arguments: { _ in BatchStatement.claim.arguments([]) }, reads: []),
            QueueStatement(
                name: "finishing batches", sql: FinishBatchesStatement.sql, types: BatchStatement.finish.types,
                arguments: { _ in BatchStatement.finish.arguments([]) }, reads: []),
        ]
    }

    /// A statement that reads `push_batches`, with the reads its plan must make.
    struct BatchStatement: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: String
        let types: String
        let arguments: @Sendable (_ batches: [(Int64, Int)]) -> String
        let reads: [QueueStatement.ExpectedRead]

        var testDescription: String { name }

        static let pkey = QueueStatement.ExpectedRead(index: "push_batches_pkey", column: "id")
        static let claim = BatchStatement(
            name: "claiming batches", sql: ClaimBatchesQuery.sql, types: "bigint, bigint", arguments: { _ in "1, 30" },
            reads: [QueueStatement.ExpectedRead(index: "push_batches_claim_idx", column: "next_attempt_at"), pkey])
        // Finished batches, one of whose members is queued again as a job.
        static let finish = BatchStatement(
            name: "finishing batches", sql: FinishBatchesStatement.sql,
            types: "bigint[], int[], bigint[], uuid[], text[], text[], float8[], text[]",
            arguments: { batches in
                let ids = batches.isEmpty ? [(1, 1)] : batches
                return "\(QueueStatement.literal(ids.map { String($0.0) })), \(QueueStatement.literal(ids.map { String($0.1) })), "
                    + "'{\(ids[0].0)}', '{00000000-0000-0000-0000-000000000001}', '{\(QueuePlanTests.token)}', "
                    + "'{\(QueuePlanTests.pubkey)}', '{2}', '{InternalServerError}'"
            }, reads: [pkey])
        static let all = [claim, finish]
    }

    /// `drainedThenBusy` for batches: a burst of batches gone but one, vacuumed and analyzed,
    /// then a new burst of 30. Returns the new burst's (id, attempts).
    static func drainedBatchesThenBusy(_ client: PostgresClient) async throws -> [(Int64, Int)] {
        let (token, pubkey) = (Self.token, Self.pubkey)
        try await client.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic) VALUES (\(token), \(pubkey), 'sandbox', 'app.test')
            """, logger: TestDatabase.logger)
        func burst(_ count: Int) async throws {
            try await client.query(
                """
                INSERT INTO push_batches (notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids, size,
                                          attempts, next_attempt_at, expires_at)
                SELECT 'new_post', md5(i::text), 'c1', ARRAY[\(token)], ARRAY[\(pubkey)], ARRAY[gen_random_uuid()], 1,
                       i % 2, now() - interval '1 second', now() + interval '1 day'
                FROM generate_series(1, \(count)) AS i
                """, logger: TestDatabase.logger)
        }
        try await client.query("ALTER TABLE push_batches SET (autovacuum_enabled = off)", logger: TestDatabase.logger)
        try await burst(20_000)
        try await client.query("DELETE FROM push_batches WHERE id < (SELECT max(id) FROM push_batches)", logger: TestDatabase.logger)
        try await client.query("VACUUM ANALYZE push_batches", logger: TestDatabase.logger)
        try await burst(30)
        var batches: [(Int64, Int)] = []
        for try await (id, attempts) in try await client.query(
            "SELECT id, attempts FROM push_batches ORDER BY id DESC LIMIT 30", logger: TestDatabase.logger
        )
        .decode((Int64, Int).self) {
            batches.append((id, attempts))
        }
        let (tuples, pages) = try await client.query(
            "SELECT reltuples::float8, relpages FROM pg_class WHERE relname = 'push_batches'",
            logger: TestDatabase.logger
        ).collect()[0].decode((Double, Int32).self)
        try #require(tuples <= 1, "autovacuum's view of a drained queue")
        try #require(pages > 100)
        return batches
    }

    /// Migration 0010: an index whose second column is `id` was planned for look-ups by id alone
    /// (a read of the whole index) in the state above; only the primary key may hold `id`.
    @Test func theClaimIndexIsKeyedByTimeAlone() async throws {
        try await TestDatabase.with { _, client in
            // Indexes with `id` among their key columns (not merely included), from the catalog.
            let holdingID = try await TestDatabase.rows(
                client,
                """
                SELECT i.indexrelid::regclass::text AS name FROM pg_index i
                WHERE i.indrelid = 'push_jobs'::regclass
                  AND (SELECT attnum FROM pg_attribute WHERE attrelid = 'push_jobs'::regclass AND attname = 'id') = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1])
                """)
            #expect(holdingID == [#"{"name":"push_jobs_pkey"}"#], "only the primary key has id as a key column: \(holdingID)")
            let claim = try await TestDatabase.rows(client, "SELECT indexdef FROM pg_indexes WHERE indexname = 'push_jobs_claim_idx'")
            #expect(claim.count == 1 && claim[0].contains("(next_attempt_at)"), "\(claim)")
        }
    }

    /// Every read of push_jobs by every statement that reads it goes through the index it was
    /// written for, with a key, in a generic and in a custom plan.
    @Test(arguments: QueueStatement.all) func readsJobsByKeyWhenTheStatisticsSayTheQueueIsEmpty(_ statement: QueueStatement) async throws {
        try await TestDatabase.with { _, client in
            let jobs = try await Self.drainedThenBusy(client)
            for mode in PlanMode.allCases {
                let plan = try await Self.plan(
                    client, statement.sql, types: statement.types, arguments: statement.arguments(jobs), mode: mode)
                let reads = TableReads(plan: plan)
                #expect(reads.unkeyed.isEmpty, "\(mode): \(reads)")
                let made = reads.keyed.map { read in
                    // The condition names its column first, as "(id = ANY (...))" or "(next_attempt_at <= now())".
                    QueueStatement.ExpectedRead(index: read.index, column: String(read.condition.dropFirst().prefix { $0 != " " }))
                }
                #expect(made.sorted() == statement.reads.sorted(), "\(mode): \(reads)")
            }
        }
    }

    /// The same for batches of typed pushes: the head of `push_batches` by due time, then each
    /// batch by id, in both plans.
    @Test(arguments: BatchStatement.all) func readsBatchesByKeyWhenTheStatisticsSayTheQueueIsEmpty(_ statement: BatchStatement)
        async throws
    {
        try await TestDatabase.with { _, client in
            let batches = try await Self.drainedBatchesThenBusy(client)
            for mode in PlanMode.allCases {
                let plan = try await Self.plan(
                    client, statement.sql, types: statement.types, arguments: statement.arguments(batches), mode: mode)
                let reads = TableReads(plan: plan, tables: ["push_batches"])
                #expect(reads.unkeyed.isEmpty, "\(mode): \(reads)")
                let made = reads.keyed.map { read in
                    QueueStatement.ExpectedRead(index: read.index, column: String(read.condition.dropFirst().prefix { $0 != " " }))
                }
                #expect(made.sorted() == statement.reads.sorted(), "\(mode): \(reads)")
            }
        }
    }

    /// An idle loop's question (`AnythingDueStatement`) reads the head of each claim index up to
    /// now, whichever queue the statistics call drained, and when both hold thousands of rows
    /// that wait (coalescing windows, leases) with statistics that know it.
    @Test(arguments: ["push_jobs drained", "push_batches drained", "both waiting"])
    func askingWhetherAnythingIsDueReadsTheHeadOfEachClaimIndex(_ state: String) async throws {
        try await TestDatabase.with { _, client in
            switch state {
            case "push_jobs drained": _ = try await Self.drainedThenBusy(client)
            case "push_batches drained": _ = try await Self.drainedBatchesThenBusy(client)
            default:
                try await AnythingDueTests.queueJob(client, dueIn: 30, count: 20_000)
                try await AnythingDueTests.queueBatch(client, dueIn: 30, attempts: 1, count: 5_000)
                try await client.query("ANALYZE push_jobs, push_batches", logger: TestDatabase.logger)
            }
            var json = ByteBuffer()
            for try await text in try await client.query(
                PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON) \(AnythingDueStatement.sql)"), logger: TestDatabase.logger
            ).decode(ByteBuffer.self) {
                json = text
            }
            let plan = try JSONSerialization.jsonObject(with: Data(json.readableBytesView))
            let reads = TableReads(plan: plan, tables: ["push_jobs", "push_batches"])
            #expect(reads.unkeyed.isEmpty, "\(reads)")
            #expect(
                reads.keyed.map { "\($0.index) \($0.condition)" }.sorted()
                    == ["push_batches_claim_idx (next_attempt_at <= now())", "push_jobs_claim_idx (next_attempt_at <= now())"],
                "\(reads)")
        }
    }

    @Test func finishingJobsWorksWhenTheStatisticsSayTheQueueIsEmpty() async throws {
        try await TestDatabase.with { _, client in
            let jobs = try await Self.drainedThenBusy(client)
            #expect(jobs.count == 300)
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            try await queue.finish(
                jobs.map { job in
                    ClaimedJob(
                        id: job.0, apnsID: UUID(), deviceToken: Self.token, pubkey: Self.pubkey,
                        environment: .sandbox, topic: "app.test", deviceUpdatedAt: Date(),
                        notification: .giftWrap(wrapID: "w", relay: "ws://relay", count: 1, recipient: Self.pubkey),
                        attempts: job.1, expiresAt: Date().addingTimeInterval(3600))
                })
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 1, "the burst deleted, the old job left")
        }
    }
}
