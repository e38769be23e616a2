import Foundation
package import GRDB

/// The client's SQLite database (through GRDB). Rows belong to an owner (an account's pubkey), so
/// two accounts on one device never see each other's data; `account(_:cipher:)` gives the view of
/// one owner. Opening a file that is not a usable database throws `StoreError.cannotOpen`.
public final class LinkstrStore: Sendable {
    public let path: String
    package let database: DatabaseQueue

    /// Opens (creating when missing) the database at `path` and migrates it; nil `path` is an
    /// in-memory database.
    public init(path: String?) throws(StoreError) {
        self.path = path ?? ":memory:"
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.label = "linkstr"
        do {
            if let path {
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                database = try DatabaseQueue(path: path, configuration: configuration)
                // WAL: readers never wait for the writer, and a crash loses at most the last transaction.
                try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = WAL") }
            } else {
                database = try DatabaseQueue(configuration: configuration)
            }
            try Self.migrator.migrate(database)
        } catch {
            throw .cannotOpen(path: self.path, reason: Self.reason(error))
        }
    }

    /// The rows of `owner`, with sensitive columns sealed by `cipher`.
    public func account(_ owner: String, cipher: FieldCipher) -> AccountStore {
        AccountStore(database: database, owner: owner, cipher: cipher)
    }

    /// Owners with any stored data (for an account picker).
    public func owners() throws(StoreError) -> [String] {
        do {
            return try database.read { db in
                try String.fetchAll(
                    db, sql: "SELECT owner FROM sessions UNION SELECT owner FROM posts UNION SELECT owner FROM account_values ORDER BY 1")
            }
        } catch { throw .database(Self.reason(error)) }
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }

    /// Numbered migrations, each applied once (GRDB records them in `grdb_migrations`).
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE sessions (
                        owner TEXT NOT NULL, id TEXT NOT NULL, name BLOB NOT NULL, creator BLOB NOT NULL,
                        version_at INTEGER NOT NULL, version_id TEXT NOT NULL, archived INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (owner, id)) WITHOUT ROWID;
                    CREATE TABLE session_snapshots (
                        owner TEXT NOT NULL, session_id TEXT NOT NULL, at INTEGER NOT NULL, event_id TEXT NOT NULL, members BLOB NOT NULL,
                        PRIMARY KEY (owner, session_id, at, event_id)) WITHOUT ROWID;
                    CREATE TABLE session_tombstones (
                        owner TEXT NOT NULL, session_id TEXT NOT NULL, deleted_by BLOB NOT NULL, at INTEGER NOT NULL, event_id TEXT NOT NULL,
                        PRIMARY KEY (owner, session_id)) WITHOUT ROWID;
                    CREATE TABLE posts (
                        owner TEXT NOT NULL, id TEXT NOT NULL, session_id TEXT NOT NULL, author BLOB NOT NULL, url BLOB NOT NULL, note BLOB,
                        created_at INTEGER NOT NULL, wrap_ids TEXT NOT NULL, is_read INTEGER NOT NULL,
                        PRIMARY KEY (owner, id)) WITHOUT ROWID;
                    CREATE INDEX posts_by_session ON posts (owner, session_id, created_at);
                    CREATE TABLE reactions (
                        owner TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL, root_id TEXT NOT NULL, emoji BLOB NOT NULL,
                        sender BLOB NOT NULL, active INTEGER NOT NULL, at INTEGER NOT NULL, event_id TEXT NOT NULL, wrap_id TEXT NOT NULL,
                        PRIMARY KEY (owner, key)) WITHOUT ROWID;
                    CREATE INDEX reactions_by_root ON reactions (owner, root_id);
                    CREATE TABLE post_deletions (
                        owner TEXT NOT NULL, root_id TEXT NOT NULL, session_id TEXT NOT NULL, deleted_by BLOB NOT NULL,
                        at INTEGER NOT NULL, event_id TEXT NOT NULL,
                        PRIMARY KEY (owner, root_id)) WITHOUT ROWID;
                    CREATE TABLE seen_wraps (owner TEXT NOT NULL, wrap_id TEXT NOT NULL, PRIMARY KEY (owner, wrap_id)) WITHOUT ROWID;
                    CREATE TABLE account_values (owner TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (owner, key)) WITHOUT ROWID;
                    """)
        }
        return migrator
    }()
}
