public import Foundation
public import Logging
public import PostgresNIO

/// Applies `migrations/NNNN_name.sql` in order, each once, each in its own transaction, recorded
/// in `schema_migrations`. A PostgreSQL advisory lock makes two instances starting together safe:
/// the second waits, then finds nothing left to do.
public struct Migrator: Sendable {
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String

        package init(version: Int, name: String, sql: String) {
            self.version = version
            self.name = name
            self.sql = sql
        }
    }

    public let migrations: [Migration]
    /// Arbitrary constant: "linkstr" in ASCII, shared by every instance.
    static let advisoryLockKey: Int64 = 0x6C69_6E6B_7374_72

    public init(migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Loads `*.sql` files named `NNNN_name.sql` from `directory`.
    public static func load(directory: String) throws -> Migrator {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }
        var migrations: [Migration] = []
        for file in files {
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw MigrationError.badFileName(file)
            }
            let sql = try String(contentsOfFile: (directory as NSString).appendingPathComponent(file), encoding: .utf8)
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql))
        }
        guard Set(migrations.map(\.version)).count == migrations.count else { throw MigrationError.duplicateVersion }
        return Migrator(migrations: migrations)
    }

    /// The folder that holds the migrations: `MIGRATIONS_DIR`, else `./migrations`, else the one
    /// beside the source tree (development and tests).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let configured = environment["MIGRATIONS_DIR"], !configured.isEmpty { return configured }
        let local = FileManager.default.currentDirectoryPath + "/migrations"
        if FileManager.default.fileExists(atPath: local) { return local }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("migrations").path
    }

    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Applies what is pending; returns the versions applied now.
    @discardableResult
    public func migrate(client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await Database(client).withConnection { connection in
            _ = try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                let applied = try await migrateLocked(connection, logger: logger)
                _ = try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                throw error
            }
        }
    }

    private func migrateLocked(_ connection: DatabaseConnection, logger: Logger) async throws -> [Int] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """, logger: logger)
        var done = Set<Int>()
        for version in try await connection.query("SELECT version FROM schema_migrations", logger: logger).decode(Int.self) {
            done.insert(version)
        }
        var applied: [Int] = []
        for migration in migrations where !done.contains(migration.version) {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    try await apply(migration, on: connection, logger: logger)
                    break
                } catch let error as PSQLError where attempt < Self.lockAttempts && Self.lostALockRace(error) {
                    // Rolled back whole, locks released: the traffic it held up goes on, and the
                    // migration waits its turn again.
                    logger.notice(
                        "a migration gave way to running statements; trying again",
                        metadata: [
                            "db.migration": "\(migration.version)_\(migration.name)", "db.attempt": "\(attempt)",
                            "db.sqlstate": "\(error.serverInfo?[.sqlState] ?? "")",
                        ])
                    try await Task.sleep(for: Self.lockRetryPause * attempt)
                } catch {
                    throw MigrationError.failed(version: migration.version, name: migration.name, reason: String(reflecting: error))
                }
            }
            logger.info("applied migration", metadata: ["db.migration": "\(migration.version)_\(migration.name)"])
            applied.append(migration.version)
        }
        return applied
    }

    /// Times a migration is tried while it loses a lock race (`lostALockRace`).
    static let lockAttempts = 5
    static let lockRetryPause: Duration = .seconds(2)

    /// A migration that takes strong locks on tables the gateway is using can wait past its own
    /// `lock_timeout` (55P03), or deadlock with a running statement that holds one of its tables
    /// while waiting for another (40P01). Either way it was rolled back whole and may simply run
    /// again.
    static func lostALockRace(_ error: PSQLError) -> Bool {
        ["55P03", "40P01"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    /// One migration in one transaction, one statement at a time (see SQLScript), recorded in
    /// `schema_migrations`; rolled back whole when any statement fails, and the error thrown.
    private func apply(_ migration: Migration, on connection: DatabaseConnection, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            for statement in SQLScript.statements(migration.sql) {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger)
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// The highest applied version, or nil when the table does not exist yet.
    public static func currentVersion(client: PostgresClient, logger: Logger) async throws -> Int? {
        let database = Database(client)
        let exists = try await database.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger).decode(Bool.self)
        guard exists.first == true else { return nil }
        for version in try await database.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", logger: logger).decode(Int.self)
        {
            return version
        }
        return nil
    }
}

public enum MigrationError: Error, CustomStringConvertible {
    case badFileName(String)
    case duplicateVersion
    case failed(version: Int, name: String, reason: String)

    public var description: String {
        switch self {
        case .badFileName(let file): "migration file \(file) is not named NNNN_name.sql"
        case .duplicateVersion: "two migrations share a version number"
        case .failed(let version, let name, let reason): "migration \(version)_\(name) failed: \(reason)"
        }
    }
}
