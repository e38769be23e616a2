import Foundation
import PostgresNIO
import PushGateway
import Synchronization
import Testing

/// A statement whose preparation failed for a passing reason runs once the reason has passed.
/// postgres-nio remembers a failed preparation for the life of its connection and answers every
/// later use of that statement there with the same error, so `DatabaseConnection` closes a
/// connection whose statement was cancelled (57014) or lost a deadlock (40P01), the two errors
/// that can strike a preparation waiting behind a migration's locks.
@Suite struct FailedPreparationTests {
    /// Runs `body` with the gateway's own pool made to hold one connection, so that a second try
    /// cannot simply land on another connection that never saw the failed preparation, and with
    /// one more server setting for that connection.
    static func withOneConnection(
        _ url: DatabaseURL, setting: (String, String), _ body: (Database) async throws -> Void
    ) async throws {
        var configuration = GatewayApplication.postgresConfiguration(url)
        configuration.options.maximumConnections = 1
        configuration.options.additionalStartupParameters.append(setting)
        let pool = PostgresClient(configuration: configuration, backgroundLogger: TestDatabase.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            defer { group.cancelAll() }
            try await body(Database(pool))
        }
    }

    /// Counts the rows of the probe table: parsing it takes a lock on the table.
    struct CountProbeRows: PostgresPreparedStatement {
        static let sql = "SELECT count(*)::int FROM preparation_probe"
        typealias Row = Int

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }
    }

    /// Counts the rows of two tables: parsing it locks the first, then the second.
    struct CountBothTables: PostgresPreparedStatement {
        static let sql = "SELECT count(*)::int FROM deadlock_first, deadlock_second"
        typealias Row = Int

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }
    }

    /// The preparation locks one table and waits for another that a transaction holds; the
    /// transaction then asks for the first, and PostgreSQL ends the preparation as the deadlock's
    /// victim (its `deadlock_timeout` is the shorter, so its check runs first; PostgreSQL checks
    /// once, so the transaction's request must come within it: a second leaves room for a loaded
    /// machine). On the same one-connection pool, the statement runs once the transaction has
    /// ended.
    @Test func aPreparationThatLosesADeadlockRunsAfterIt() async throws {
        try await TestDatabase.with { (url: DatabaseURL, client: PostgresClient) async throws -> Void in
            for statement: PostgresQuery in [
                "CREATE TABLE deadlock_first (x int)", "CREATE TABLE deadlock_second (x int)",
                "INSERT INTO deadlock_first VALUES (1)", "INSERT INTO deadlock_second VALUES (1)",
            ] {
                try await client.query(statement, logger: TestDatabase.logger)
            }
            try await Self.withOneConnection(url, setting: ("deadlock_timeout", "1s")) { database in
                let holding = Task {
                    try await client.withConnection { connection in
                        try await connection.query("BEGIN", logger: TestDatabase.logger)
                        try await connection.query("SET LOCAL deadlock_timeout = '10s'", logger: TestDatabase.logger)
                        try await connection.query("LOCK TABLE deadlock_second IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                        // Once the preparation holds the first table and waits for the second.
                        try await TestDatabase.waitUntilLocked(client, table: "deadlock_second", mode: "AccessShareLock", granted: false)
                        try await connection.query("LOCK TABLE deadlock_first IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                        try await connection.query("COMMIT", logger: TestDatabase.logger)
                    }
                }
                try await TestDatabase.waitUntilLocked(client, table: "deadlock_second", mode: "AccessExclusiveLock")
                let refusal = await #expect(throws: PSQLError.self) {
                    try await database.execute(CountBothTables(), logger: TestDatabase.logger)
                }
                #expect(refusal?.serverInfo?[.sqlState] == "40P01", "the preparation was the deadlock's victim")
                try await holding.value
                #expect(try await database.execute(CountBothTables(), logger: TestDatabase.logger) == [1])
            }
        }
    }

    /// The preparation waits for a table a transaction holds, and `statement_timeout` cancels it.
    /// On the same one-connection pool, the statement runs once the transaction has ended.
    @Test func aPreparationCancelledBehindALockRunsAfterTheLockIsGone() async throws {
        try await TestDatabase.with { (url: DatabaseURL, client: PostgresClient) async throws -> Void in
            try await client.query("CREATE TABLE preparation_probe (x int)", logger: TestDatabase.logger)
            try await client.query("INSERT INTO preparation_probe VALUES (1), (2)", logger: TestDatabase.logger)
            let release = Mutex(false)
            defer { release.withLock { $0 = true } }
            let holding = Task {
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: TestDatabase.logger)
                    try await connection.query("LOCK TABLE preparation_probe IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                    while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
                    try await connection.query("COMMIT", logger: TestDatabase.logger)
                }
            }
            try await TestDatabase.waitUntilLocked(client, table: "preparation_probe", mode: "AccessExclusiveLock")
            try await Self.withOneConnection(url, setting: ("statement_timeout", "300ms")) { database in
                let refusal = await #expect(throws: PSQLError.self) {
                    try await database.execute(CountProbeRows(), logger: TestDatabase.logger)
                }
                #expect(refusal?.serverInfo?[.sqlState] == "57014", "cancelled by statement_timeout while waiting for the lock")

                release.withLock { $0 = true }
                try await holding.value
                #expect(try await database.execute(CountProbeRows(), logger: TestDatabase.logger) == [2])
            }
        }
    }
}
