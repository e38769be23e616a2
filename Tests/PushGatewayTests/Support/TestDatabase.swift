import Foundation
import Logging
import NostrProtocol
import PostgresNIO
import PushGateway
import Testing

/// A throwaway database per test on the PostgreSQL cluster that scripts/test.sh starts
/// (`POSTGRES_TEST_URL`). Tests fail with a clear message when no server is configured.
enum TestDatabase {
    static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()

    static func adminURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment["POSTGRES_TEST_URL"], !text.isEmpty else {
            throw TestSetupError("POSTGRES_TEST_URL is not set: run the tests through scripts/test.sh, which starts PostgreSQL")
        }
        return try DatabaseURL(parsing: text)
    }

    /// Creates a fresh database, runs `body` with its URL and a running client, drops it after.
    /// `options` go to `CREATE DATABASE` (as "TEMPLATE template0 LOCALE_PROVIDER icu …").
    static func with<T: Sendable>(
        migrate: Bool = true, options: String = "", _ body: @Sendable (DatabaseURL, PostgresClient) async throws -> T
    ) async throws -> T {
        let admin = try adminURL()
        var url = admin
        url.database = "t_" + Hex.encode(SecureRandom.bytes(8))
        let adminClient = GatewayApplication.postgresClient(admin, logger: logger)
        let client = GatewayApplication.postgresClient(url, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await adminClient.run() }
            try await adminClient.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(url.database) \(options)"), logger: logger)
            group.addTask { await client.run() }
            let outcome: Result<T, any Error>
            do {
                if migrate { try await Migrator.load(directory: Migrator.defaultDirectory()).migrate(client: client, logger: logger) }
                outcome = .success(try await body(url, client))
            } catch {
                outcome = .failure(error)
            }
            // Dropped while the admin client still runs, whatever the body did: cancelling the
            // group first stopped it, the drop failed unseen, and every passing test left its
            // database behind for the cluster's autovacuum launcher to visit for the rest of the run.
            _ = try? await adminClient.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(url.database) WITH (FORCE)"), logger: logger)
            group.cancelAll()
            return try outcome.get()
        }
    }

    /// Waits until some connection holds a `mode` lock (as `pg_locks` names it) on `table` in
    /// this database, or with `granted: false` waits for one.
    static func waitUntilLocked(_ client: PostgresClient, table: String, mode: String, granted: Bool = true) async throws {
        let held = """
            SELECT count(*)::int FROM pg_locks
            WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND relation = '\(table)'::regclass AND mode = '\(mode)' AND granted = \(granted)
            """
        while try await count(client, held) == 0 { try await Task.sleep(for: .milliseconds(10)) }
    }

    static func count(_ client: PostgresClient, _ sql: String) async throws -> Int {
        for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Int.self) { return value }
        return 0
    }

    /// The first column of each row `sql` returns, as text, in order.
    static func strings(_ client: PostgresClient, _ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) {
            values.append(value)
        }
        return values
    }

    /// The rows of `sql` as JSON text, for failure messages.
    static func rows(_ client: PostgresClient, _ sql: String) async throws -> [String] {
        var rows: [String] = []
        let query = PostgresQuery(unsafeSQL: "SELECT row_to_json(r)::text FROM (\(sql)) r")
        for try await row in try await client.query(query, logger: logger).decode(String.self) { rows.append(row) }
        return rows
    }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
