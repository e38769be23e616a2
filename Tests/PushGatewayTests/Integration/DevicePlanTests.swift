import PostgresNIO
import PushGateway
import Testing

/// Statements that read `devices` for one request or one batch of wraps read it, and the tables
/// they join to it, by key whatever the planner believes. Any caller can run them (a
/// registration past the cap evicts, a push or an inbox EVENT names its recipients), so a plan
/// that scans a whole table per statement is PostgreSQL CPU an attacker controls. On statistics
/// that overestimate the devices per pubkey (a sample taken while a few pubkeys held most of the
/// table), the planner prefers hash joins and hashed subplans to per-row look-ups; the eviction's
/// plain join was seen that way in the gateway benchmark, at 50–60 ms an eviction with 100,000
/// devices.
@Suite(.serialized) struct DevicePlanTests {
    /// The tables checked: a request's devices, their alert budgets (a table that drains when
    /// every bucket is full again and is pruned, like the queue), the archive and the dedupe rows.
    static let keyedTables: Set<String> = ["devices", "device_pacing", "archived_conversations", "push_dedupe"]

    /// `devices` in that state: statistics taken while 100 pubkeys held 20 devices each (half of
    /// them relay-watched; 100 distinct pubkeys in 2,000 rows, under ANALYZE's 10 % threshold, so
    /// the count is kept as a number, not a ratio), then a table fifty times that size with one
    /// device per pubkey. The planner expects a thousand devices per pubkey. `device_pacing`
    /// analyzed with one row, then holding one for every device. 100,000 archived conversations
    /// and 100,000 dedupe rows, analyzed.
    ///
    /// `sampledOnly`: without the schema's own figure for devices per pubkey (migration 0018),
    /// as a sample alone would have it.
    static func crowdedStatistics(_ client: PostgresClient, sampledOnly: Bool = false) async throws {
        if sampledOnly {
            try await client.query("ALTER TABLE devices ALTER COLUMN pubkey RESET (n_distinct)", logger: TestDatabase.logger)
        }
        try await client.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
            SELECT 'crowded' || i, 'crowded' || (i % 100), 'sandbox', 'app.test', i % 2 = 0 FROM generate_series(1, 2000) AS i
            """, logger: TestDatabase.logger)
        // Budgets drained to one row when analyzed, then a burst's worth.
        try await client.query(
            "INSERT INTO device_pacing (device_token, tokens, updated_at) SELECT device_token, 9, now() FROM devices",
            logger: TestDatabase.logger)
        try await client.query("DELETE FROM device_pacing WHERE device_token <> 'crowded1'", logger: TestDatabase.logger)
        try await client.query(
            """
            INSERT INTO archived_conversations (pubkey, conversation_id)
            SELECT 'single' || (i % 50000), 'conversation' || i FROM generate_series(1, 100000) AS i
            """, logger: TestDatabase.logger)
        try await client.query(
            """
            INSERT INTO push_dedupe (event_id, notification_type, recipient)
            SELECT 'event' || i, 'new_post', 'single' || (i % 50000) FROM generate_series(1, 100000) AS i
            """, logger: TestDatabase.logger)
        for table in ["devices", "device_pacing", "archived_conversations", "push_dedupe"] {
            try await client.query(
                PostgresQuery(unsafeSQL: "ALTER TABLE \(table) SET (autovacuum_enabled = off)"), logger: TestDatabase.logger)
        }
        try await client.query("VACUUM ANALYZE devices, device_pacing, archived_conversations, push_dedupe", logger: TestDatabase.logger)
        try await client.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
            SELECT 'single' || i, 'single' || i, 'sandbox', 'app.test', i % 2 = 0 FROM generate_series(1, 100000) AS i
            """, logger: TestDatabase.logger)
        try await client.query(
            "INSERT INTO device_pacing (device_token, tokens, updated_at) SELECT device_token, 9, now() FROM devices ON CONFLICT DO NOTHING",
            logger: TestDatabase.logger)
    }

    /// A statement that reads devices for one request or one batch of wraps, with arguments.
    struct DeviceStatement: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: String
        let types: String
        let arguments: String
        /// Also checked with nested loops off: the statement must stay keyed under a hash or
        /// merge join too. Set for the statements whose plain joins were seen turning into hash
        /// joins over `devices` on such statistics.
        var underAnyJoin = false
        /// Also checked on statistics from a sample alone, without migration 0018's figure for
        /// devices per pubkey. Not for a check that stops at a pubkey's first device: on a sample
        /// that expects hundreds of devices per pubkey, PostgreSQL plans any such check as a
        /// sequential scan expected to end early, and the schema's figure is what keeps it keyed.
        var keyedOnASampleAlone = true
        var testDescription: String { name }

        static let crowdedPubkeys = "'{\((0..<16).map { "crowded\($0)" }.joined(separator: ","))}'"
        static let enqueueTypes =
            "text, text, timestamptz, text[], text, text, text, text, text, float8, bool, float8, bool, float8, float8, bool"
        static func enqueueArguments(_ type: String) -> String {
            "'sender', 'replay', '2030-01-01T00:00:00Z', \(crowdedPubkeys), 'event', '\(type)', 'c1', NULL, NULL, 900, true, 30, true, 10, 0.1667, false"
        }

        static let all: [DeviceStatement] =
            [
                DeviceStatement(
                    name: "evicting devices past the cap", sql: EvictExcessDevicesStatement.sql, types: "text[], bigint",
                    arguments: "\(crowdedPubkeys), 5",
                    underAnyJoin: true),
                DeviceStatement(
                    name: "queueing a push", sql: EnqueuePushStatement.sql, types: enqueueTypes, arguments: enqueueArguments("new_post")),
                // A call's custom plan also holds the check for the recipient's VoIP tokens.
                DeviceStatement(
                    name: "queueing a call", sql: EnqueuePushStatement.sql, types: enqueueTypes,
                    arguments: enqueueArguments("incoming_call")),
            ]
            + QueuePlanTests.QueueStatement.all.map { statement in
                DeviceStatement(
                    name: statement.name, sql: statement.sql, types: statement.types, arguments: statement.arguments([]),
                    // The inbox's store asks whether each recipient has a device.
                    keyedOnASampleAlone: statement.name != "storing inbox wraps")
            }
    }

    /// Every statement that reads devices for a request or a batch of wraps reads them by key in
    /// its generic and its custom plan, with and without the schema's figure for devices per
    /// pubkey; the eviction whatever join the planner picks.
    @Test(arguments: DeviceStatement.all) func readsDevicesByKeyWhenTheStatisticsExpectCrowdedPubkeys(_ statement: DeviceStatement)
        async throws
    {
        for sampledOnly in statement.keyedOnASampleAlone ? [false, true] : [false] {
            try await TestDatabase.with { _, client in
                try await Self.crowdedStatistics(client, sampledOnly: sampledOnly)
                for mode in QueuePlanTests.PlanMode.allCases {
                    for nestedLoops in statement.underAnyJoin ? [true, false] : [true] {
                        let plan = try await QueuePlanTests.plan(
                            client, statement.sql, types: statement.types, arguments: statement.arguments, mode: mode,
                            nestedLoops: nestedLoops)
                        let unkeyed = QueuePlanTests.TableReads(plan: plan, tables: Self.keyedTables).unkeyed
                        #expect(unkeyed.isEmpty, "sampled only \(sampledOnly), \(mode), nested loops \(nestedLoops): \(unkeyed)")
                    }
                }
            }
        }
    }

    @Test func theEvictionKeepsEachPubkeysNewestDevices() async throws {
        try await TestDatabase.with { _, client in
            try await Self.crowdedStatistics(client)
            // Each of the 16 pubkeys keeps its 5 newest devices of 20.
            let evicted = try await client.execute(
                EvictExcessDevicesStatement(pubkeys: (0..<16).map { "crowded\($0)" }, maxDevicesPerPubkey: 5), logger: TestDatabase.logger)
            var count = 0
            for try await _ in evicted { count += 1 }
            #expect(count == 16 * 15)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices WHERE pubkey = 'crowded3'") == 5)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices WHERE pubkey = 'crowded99'") == 20)
        }
    }
}
