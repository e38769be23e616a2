import Foundation
import HTTPTypes
import HummingbirdCore
import PostgresNIO
import PushGateway
import Testing

@Suite(.serialized) struct MigrationTests {
    /// Applies the migrations before `version`; returns all of them, for the rest.
    static func migrate(_ client: PostgresClient, before version: Int) async throws -> Migrator {
        let all = try Migrator.load(directory: Migrator.defaultDirectory())
        let earlier = Migrator(migrations: all.migrations.filter { $0.version < version })
        _ = try await earlier.migrate(client: client, logger: TestDatabase.logger)
        return all
    }

    /// One gift-wrap batch of `members`, its arrays made in SQL: random hex tokens and wrap ids, one
    /// relay, and each member's pubkey from `pubkey` (SQL over `i`, the member's number; by
    /// default random hex too).
    static func insertGiftWrapBatch(
        _ client: PostgresClient, members: Int, pubkey: String = "encode(sha256(('p' || i)::bytea), 'hex')"
    ) async throws {
        try await client.query(
            """
            INSERT INTO push_batches (notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids, event_ids,
                                      relays, wrap_counts, size, expires_at)
            SELECT 'gift_wrap', '', '', array_agg(encode(sha256(('t' || i)::bytea), 'hex')), array_agg(\(unescaped: pubkey)),
                   array_agg(gen_random_uuid()), array_agg(encode(sha256(('w' || i)::bytea), 'hex')),
                   array_agg('wss://relay.example'::text), array_agg(1), \(members), now() + interval '1 hour'
            FROM generate_series(1, \(members)) AS i
            """, logger: TestDatabase.logger)
    }

    @Test func appliesOnceAndConcurrentStartsAreSafe() async throws {
        try await TestDatabase.with(migrate: false) { (url: DatabaseURL, client: PostgresClient) async throws -> Void in
            let migrator = try Migrator.load(directory: Migrator.defaultDirectory())
            #expect(migrator.latestVersion >= 1)
            #expect(try await Migrator.currentVersion(client: client, logger: TestDatabase.logger) == nil)
            // Two "instances" migrate at once: one applies everything, the other nothing.
            let other = GatewayApplication.postgresClient(url, logger: TestDatabase.logger)
            let results = try await withThrowingTaskGroup(of: [Int].self) { group in
                group.addTask {
                    await other.run()
                    return []
                }
                async let first = migrator.migrate(client: client, logger: TestDatabase.logger)
                async let second = migrator.migrate(client: other, logger: TestDatabase.logger)
                let both = try await [first, second]
                group.cancelAll()
                return both
            }
            #expect(results.flatMap { $0 }.sorted() == migrator.migrations.map(\.version))
            #expect(try await Migrator.currentVersion(client: client, logger: TestDatabase.logger) == migrator.latestVersion)
            #expect(try await migrator.migrate(client: client, logger: TestDatabase.logger).isEmpty)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM schema_migrations") == migrator.migrations.count)
        }
    }

    /// The table every push rewrites but a crash may lose (coalescing windows and alert budgets)
    /// writes no WAL and leave room for updates in place; what a push's delivery depends on is
    /// logged.
    @Test func onlyWhatACrashMayLoseIsUnlogged() async throws {
        try await TestDatabase.with { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let rows = try await client.query(
                """
                SELECT relname, relpersistence::text, coalesce(array_to_string(reloptions, ','), '') FROM pg_class
                WHERE relname IN ('device_pacing', 'push_jobs', 'push_batches', 'seen_wraps', 'inbox_wraps', 'devices')
                  AND relkind = 'r'
                """, logger: TestDatabase.logger)
            var tables: [String: (persistence: String, options: String)] = [:]
            for try await (name, persistence, options) in rows.decode((String, String, String).self) {
                tables[name] = (persistence, options)
            }
            #expect(tables.count == 6)
            for name in ["device_pacing"] {
                #expect(tables[name]?.persistence == "u", "\(name)")
                #expect(tables[name]?.options.contains("fillfactor=50") == true, "\(name)")
            }
            for name in ["push_jobs", "push_batches", "seen_wraps", "inbox_wraps", "devices"] {
                #expect(tables[name]?.persistence == "p", "\(name)")
            }
        }
    }

    /// A batch of up to about 30 pushes stays whole in its row, with nothing in the TOAST table; a
    /// larger one moves its arrays there (which also shows the measure counts what it should),
    /// uncompressed.
    @Test func aBatchOfThirtyPushesStaysInItsRow() async throws {
        try await TestDatabase.with { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            // The TOAST table's size in bytes: it has no page until a row moves anything there.
            let toastBytes = "SELECT pg_relation_size(reltoastrelid)::int FROM pg_class WHERE relname = 'push_batches'"
            try await Self.insertGiftWrapBatch(client, members: 30)
            #expect(try await TestDatabase.count(client, toastBytes) == 0, "30 pushes: the row holds its arrays")
            try await Self.insertGiftWrapBatch(client, members: 200)
            #expect(try await TestDatabase.count(client, toastBytes) > 0, "200 pushes: arrays moved out of the row")
            // The random arrays are never offered to compression (EXTERNAL); pubkeys, which repeat
            // in a typed push's batch, are.
            let storage = try await client.query(
                """
                SELECT attname::text, attstorage::text FROM pg_attribute
                WHERE attrelid = 'push_batches'::regclass AND attname IN ('device_tokens', 'apns_ids', 'event_ids', 'pubkeys')
                """, logger: TestDatabase.logger)
            var storageByColumn: [String: String] = [:]
            for try await (name, kind) in storage.decode((String, String).self) { storageByColumn[name] = kind }
            #expect(storageByColumn == ["device_tokens": "e", "apns_ids": "e", "event_ids": "e", "pubkeys": "x"])
        }
    }

    /// The arrays that are offered to compression are compressed with lz4 (migration 0025), and a
    /// batch written that way reads back whole: a typed push's repeated pubkey and one relay per
    /// member shrink, and a gift-wrap batch's random pubkeys are stored as they are.
    @Test func batchArraysThatRepeatAreCompressedWithLZ4() async throws {
        try await TestDatabase.with { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let methods = try await client.query(
                """
                SELECT attname::text, attcompression::text FROM pg_attribute
                WHERE attrelid = 'push_batches'::regclass AND attname IN ('pubkeys', 'relays', 'device_tokens')
                """, logger: TestDatabase.logger)
            var methodByColumn: [String: String] = [:]
            for try await (name, method) in methods.decode((String, String).self) { methodByColumn[name] = method }
            // "l" is lz4; an empty method is the server's default (pglz), which EXTERNAL never uses.
            #expect(methodByColumn == ["pubkeys": "l", "relays": "l", "device_tokens": ""])

            // 200 members: one pubkey repeated (a typed push), then 200 different ones (gift wraps).
            try await Self.insertGiftWrapBatch(client, members: 200, pubkey: "'ab' || repeat('0', 62)")
            try await Self.insertGiftWrapBatch(client, members: 200)
            let stored = try await client.query(
                """
                SELECT id::int, coalesce(pg_column_compression(pubkeys), 'none'), coalesce(pg_column_compression(relays), 'none'),
                       pg_column_size(pubkeys)::int, cardinality(pubkeys)::int, pubkeys[200], relays[200]
                FROM push_batches ORDER BY id
                """, logger: TestDatabase.logger)
            var rows: [(Int, String, String, Int, Int, String, String)] = []
            for try await row in stored.decode((Int, String, String, Int, Int, String, String).self) { rows.append(row) }
            try #require(rows.count == 2)
            let repeated = rows[0]
            #expect(repeated.1 == "lz4" && repeated.2 == "lz4")
            #expect(repeated.3 < 200 * 65 / 4, "a repeated pubkey shrinks: \(repeated.3) bytes")
            #expect(repeated.4 == 200 && repeated.5 == "ab" + String(repeating: "0", count: 62) && repeated.6 == "wss://relay.example")
            let random = rows[1]
            #expect(random.2 == "lz4")
            #expect(random.3 > 200 * 64 * 9 / 10, "random hex hardly shrinks: \(random.3) bytes")
            #expect(random.4 == 200 && random.5.count == 64)
        }
    }

    /// Migration 0023 folds the coalescing windows into the budgets' rows: an open window moves
    /// over (onto the device's budget row, or a full bucket of its own), a passed one is dropped,
    /// a budget without a window keeps its tokens. The release before, during a rolling deploy,
    /// still charges, reads and prunes budgets under the old name (a view), and keeps its own
    /// windows in `watch_coalesce`.
    @Test func devicePacingTakesOpenWindowsAndBudgets() async throws {
        try await TestDatabase.with(migrate: false) { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let all = try await Self.migrate(client, before: 23)
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
                SELECT 'token-' || x, 'pubkey-' || x, 'sandbox', 'app.test', true FROM unnest(ARRAY['a', 'b', 'c', 'd']) AS x
                """, logger: TestDatabase.logger)
            try await client.query(
                """
                INSERT INTO watch_coalesce (device_token, next_at)
                VALUES ('token-a', now() + interval '30 seconds'), ('token-b', now() - interval '1 hour'),
                       ('token-d', now() + interval '40 seconds')
                """, logger: TestDatabase.logger)
            try await client.query(
                "INSERT INTO device_budgets (device_token, tokens, updated_at) VALUES ('token-a', 3, now()), ('token-c', 2, now())",
                logger: TestDatabase.logger)
            _ = try await all.migrate(client: client, logger: TestDatabase.logger)

            let rows = try await client.query(
                """
                SELECT device_token, tokens, updated_at = 'epoch', next_at IS NULL,
                       coalesce(next_at BETWEEN now() + interval '25 seconds' AND now() + interval '45 seconds', false)
                FROM device_pacing ORDER BY device_token
                """, logger: TestDatabase.logger)
            var pacing: [String] = []
            for try await (token, tokens, charged, noWindow, open) in rows.decode((String, Double, Bool, Bool, Bool).self) {
                pacing.append("\(token) \(tokens) \(charged ? "full" : "charged") \(noWindow ? "none" : open ? "open" : "?")")
            }
            #expect(pacing == ["token-a 3.0 charged open", "token-c 2.0 charged none", "token-d 0.0 full open"])

            // The release before's charge (`PushBudget.chargeSQL` as it was), through the view:
            // token-a's bucket loses a token and keeps its window, token-b gets a row.
            let charged = try await TestDatabase.strings(
                client,
                """
                INSERT INTO device_budgets AS b (device_token, tokens, updated_at)
                SELECT t, 9, now() FROM unnest(ARRAY['token-a', 'token-b']) AS t ORDER BY t
                ON CONFLICT (device_token) DO UPDATE SET tokens = least(10, b.tokens) - 1, updated_at = greatest(b.updated_at, now())
                    WHERE least(10, b.tokens) >= 1
                RETURNING device_token
                """)
            #expect(charged == ["token-a", "token-b"])
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT count(*)::int FROM device_pacing
                    WHERE (device_token = 'token-a' AND tokens = 2 AND next_at > now()) OR (device_token = 'token-b' AND tokens = 9 AND next_at IS NULL)
                    """) == 2)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM watch_coalesce") == 3, "kept for the release before")
            // Its read of a device's budget, and its prune, which leaves the open windows (a, d).
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT count(*)::int FROM unnest(ARRAY['token-a', 'token-e']) AS t(token)
                    LEFT JOIN LATERAL (SELECT b.tokens FROM device_budgets b WHERE b.device_token = t.token OFFSET 0) b ON true
                    WHERE b.tokens IS NOT DISTINCT FROM CASE t.token WHEN 'token-a' THEN 2 END
                    """) == 2)
            #expect(
                try await TestDatabase.count(
                    client,
                    "WITH gone AS (DELETE FROM device_budgets WHERE updated_at < now() + interval '1 hour' RETURNING 1) SELECT count(*)::int FROM gone"
                ) == 2)
            #expect(
                try await TestDatabase.strings(client, "SELECT device_token FROM device_pacing ORDER BY device_token") == [
                    "token-a", "token-d",
                ])
        }
    }

    /// The gateway's identifiers compare byte by byte even on a database whose default collation
    /// is linguistic (ICU's en-US here, like en_US.UTF-8 on many installations), where "a" sorts
    /// before "B": migration 0024 gives every identifier column the C collation. Rows from before
    /// are still found by their keys, and every text column of the gateway's tables is C but
    /// free text and secrets, so a column added without it fails here.
    @Test func identifiersCompareByteByByteOnALinguisticDatabase() async throws {
        let linguistic = "TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
        try await TestDatabase.with(migrate: false, options: linguistic) { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let all = try await Self.migrate(client, before: 24)
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
                VALUES ('a', 'pubkey-a', 'sandbox', 'app.test', true), ('B', 'pubkey-B', 'sandbox', 'app.test', true)
                """, logger: TestDatabase.logger)
            try await client.query("INSERT INTO seen_wraps (wrap_id) VALUES ('a'), ('B')", logger: TestDatabase.logger)
            let order = "SELECT device_token FROM devices ORDER BY device_token"
            #expect(try await TestDatabase.strings(client, order) == ["a", "B"], "the database's own collation is linguistic")
            _ = try await all.migrate(client: client, logger: TestDatabase.logger)

            #expect(try await TestDatabase.strings(client, order) == ["B", "a"])
            #expect(try await TestDatabase.strings(client, "SELECT wrap_id FROM seen_wraps ORDER BY wrap_id") == ["B", "a"])
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT (SELECT count(*) FROM devices WHERE device_token = 'a' AND pubkey = 'pubkey-a')
                         + (SELECT count(*) FROM seen_wraps WHERE wrap_id = ANY (ARRAY['B', 'b']))
                    """) == 2, "found by their keys as before")
            let freeText: Set<String> = [
                "devices.auth_secret", "devices.p256dh", "gateway_identity.secret_key", "inbox_wraps.event", "push_batches.emoji",
                "push_jobs.emoji", "push_jobs.last_error", "schema_migrations.name", "vapid_key.private_key",
            ]
            let notC = try await TestDatabase.strings(
                client,
                """
                SELECT c.table_name || '.' || c.column_name FROM information_schema.columns c
                JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.udt_name IN ('text', '_text')
                  AND c.collation_name IS DISTINCT FROM 'C'
                ORDER BY 1
                """)
            #expect(Set(notC) == freeText, "\(Set(notC).symmetricDifference(freeText).sorted())")
        }
    }

    /// An instance that was running while migration 0024 changed the collation of columns its
    /// prepared statements return keeps working: PostgreSQL refuses such a statement ("cached
    /// plan must not change result type"), and the connection that had it prepared is replaced,
    /// so the statement runs on a fresh one. Here the eviction, prepared before on each of the
    /// pool's six connections, then run after the migration: the pool hands out its idle, stale
    /// connections first, one after the other, before it makes a fresh one.
    @Test func aStatementPreparedBeforeACollationChangeRunsAfterIt() async throws {
        try await TestDatabase.with(migrate: false) { (url: DatabaseURL, client: PostgresClient) async throws -> Void in
            let all = try await Self.migrate(client, before: 24)
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic, updated_at)
                VALUES ('token-old', 'pubkey-a', 'sandbox', 'app.test', now() - interval '1 hour'),
                       ('token-new', 'pubkey-a', 'sandbox', 'app.test', now())
                """, logger: TestDatabase.logger)
            // The gateway's own pool, made small.
            var configuration = GatewayApplication.postgresConfiguration(url)
            configuration.options.maximumConnections = 6
            let running = PostgresClient(configuration: configuration, backgroundLogger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await running.run() }
                defer { group.cancelAll() }
                let database = Database(running)
                let keepAll = EvictExcessDevicesStatement(pubkeys: ["pubkey-a"], maxDevicesPerPubkey: 5)
                // Six at once, each holding its connection a moment: every connection prepares it.
                try await withThrowingTaskGroup(of: Int.self) { preparing in
                    for _ in 0..<6 {
                        preparing.addTask {
                            try await database.withConnection { connection in
                                let evicted = try await connection.execute(keepAll, logger: TestDatabase.logger)
                                try await Task.sleep(for: .milliseconds(300))
                                return evicted.count
                            }
                        }
                    }
                    for try await evicted in preparing { #expect(evicted == 0, "prepared, nothing evicted") }
                }
                _ = try await all.migrate(client: client, logger: TestDatabase.logger)
                let keepOne = EvictExcessDevicesStatement(pubkeys: ["pubkey-a"], maxDevicesPerPubkey: 1)
                #expect(try await database.execute(keepOne, logger: TestDatabase.logger) == ["pubkey-a"])
                #expect(try await TestDatabase.strings(client, "SELECT device_token FROM devices") == ["token-new"])
            }
        }
    }

    /// A migration that cannot have its locks within its `lock_timeout` (a transaction holds a
    /// table it changes, as a running statement would) is rolled back and tried again, and the
    /// next try, after the transaction ended, applies it.
    @Test func aMigrationThatWaitsTooLongForALockIsTriedAgain() async throws {
        try await TestDatabase.with { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let holding = Task {
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: TestDatabase.logger)
                    try await connection.query("LOCK TABLE devices IN ACCESS SHARE MODE", logger: TestDatabase.logger)
                    try await Task.sleep(for: .seconds(2))
                    try await connection.query("COMMIT", logger: TestDatabase.logger)
                }
            }
            try await TestDatabase.waitUntilLocked(client, table: "devices", mode: "AccessShareLock")
            let waiting = Migrator(migrations: [
                Migrator.Migration(
                    version: 10_000, name: "waits",
                    sql: """
                        SET LOCAL lock_timeout = '300ms';
                        LOCK TABLE devices IN ACCESS EXCLUSIVE MODE;
                        ALTER TABLE devices ADD COLUMN waited bool
                        """)
            ])
            let started = ContinuousClock.now
            #expect(try await waiting.migrate(client: client, logger: TestDatabase.logger) == [10_000])
            #expect(ContinuousClock.now - started >= .seconds(1), "applied after the first try gave way")
            try await holding.value
            let added = "SELECT count(*)::int FROM information_schema.columns WHERE column_name = 'waited'"
            #expect(try await TestDatabase.count(client, added) == 1)
        }
    }

    /// Maintenance prunes a pacing row only when it says nothing: its bucket full again (untouched
    /// for the refill time) and its window passed.
    @Test func maintenanceKeepsPacingRowsThatStillHoldSomethingBack() async throws {
        try await TestDatabase.with { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            try await client.query(
                """
                INSERT INTO device_pacing (device_token, tokens, updated_at, next_at) VALUES
                    ('full-no-window', 9, now() - interval '2 minutes', NULL),
                    ('full-window-passed', 0, 'epoch', now() - interval '1 minute'),
                    ('full-window-open', 9, now() - interval '2 minutes', now() + interval '30 seconds'),
                    ('refilling', 4, now() - interval '10 seconds', NULL)
                """, logger: TestDatabase.logger)
            let store = GatewayStore(client: client, logger: TestDatabase.logger, deviceBudget: PushBudget(alerts: 10, perSeconds: 60))
            _ = try await store.prune()
            #expect(
                try await TestDatabase.strings(client, "SELECT device_token FROM device_pacing ORDER BY device_token") == [
                    "full-window-open", "refilling",
                ])
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await TestDatabase.with(migrate: false) { (_: DatabaseURL, client: PostgresClient) async throws -> Void in
            let broken = Migrator(migrations: [
                .init(version: 1, name: "ok", sql: "CREATE TABLE a (x int);"),
                .init(version: 2, name: "broken", sql: "CREATE TABLE b (y int); SELECT * FROM no_such_table;"),
            ])
            await #expect(throws: MigrationError.self) { try await broken.migrate(client: client, logger: TestDatabase.logger) }
            #expect(try await Migrator.currentVersion(client: client, logger: TestDatabase.logger) == 1)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM pg_tables WHERE tablename = 'b'") == 0)
        }
    }

    @Test func readinessFollowsMigrations() async throws {
        try await TestDatabase.with(migrate: false) { (url: DatabaseURL, client: PostgresClient) async throws -> Void in
            let configuration = GatewayHarness.configuration(url)
            let migrator = try Migrator.load(directory: Migrator.defaultDirectory())
            let api = GatewayAPI(
                store: GatewayStore(client: client, logger: TestDatabase.logger), configuration: configuration,
                latestMigration: migrator.latestVersion)
            #expect(await api.ready().status == .serviceUnavailable)
            try await migrator.migrate(client: client, logger: TestDatabase.logger)
            // Readiness is cached for a second (ThrottledSnapshot), so a fast migration may still
            // see the answer from before it: ready within that second and a little, not at once.
            let deadline = ContinuousClock.now + .seconds(30)
            var status = await api.ready().status
            while status != .ok, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                status = await api.ready().status
            }
            #expect(status == .ok)
        }
    }
}

@Suite struct SQLScriptTests {
    @Test func splitsOutsideQuotesCommentsAndDollarBodies() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'a;b');
            /* block; comment */ CREATE TABLE "we;ird" (y int);
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            DO $$ BEGIN PERFORM 1; END $$;
            SELECT 'it''s; fine'
            """
        let statements = SQLScript.statements(script)
        #expect(statements.count == 5)
        #expect(statements[0].hasSuffix("DEFAULT 'a;b')"))
        #expect(statements[1].contains("\"we;ird\""))
        #expect(statements[2].contains("$body$ SELECT 1; $body$"))
        #expect(statements[3] == "DO $$ BEGIN PERFORM 1; END $$")
        #expect(statements[4] == "SELECT 'it''s; fine'")
        #expect(SQLScript.statements("-- only a comment\n").isEmpty)
    }
}
