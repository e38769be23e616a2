import Foundation
import GRDB

/// One owner's rows in the `LinkstrStore`: the ledger loaded and saved, local session flags and
/// account values. Every statement filters on the owner.
public struct AccountStore: Sendable {
    let database: DatabaseQueue
    public let owner: String
    let cipher: FieldCipher

    // MARK: The ledger

    /// The ledger as stored: sessions with their snapshot history, tombstones, posts, reactions,
    /// deletion watermarks and the wraps already seen.
    public func loadLedger(pendingLimit: Int = PendingMessages.defaultLimit) throws(StoreError) -> LinkstrLedger {
        let rows = try fetchLedgerRows()
        let sessions = SessionLedger(
            me: owner, sessions: try sessions(rows.sessions, snapshots: rows.snapshots),
            tombstones: try tombstones(rows.tombstones))
        return LinkstrLedger(
            me: owner, sessions: sessions, posts: try posts(rows.posts), reactions: try reactions(rows.reactions),
            deletions: try deletions(rows.deletions), seenWrapIDs: Set(rows.seen), pendingLimit: pendingLimit)
    }

    /// The owner's ledger tables, read in one transaction so they agree with each other.
    private struct LedgerRows {
        var sessions: [Row]
        var snapshots: [Row]
        var tombstones: [Row]
        var posts: [Row]
        var reactions: [Row]
        var deletions: [Row]
        var seen: [String]
    }

    private func fetchLedgerRows() throws(StoreError) -> LedgerRows {
        do {
            return try database.read { db in
                let arguments: StatementArguments = [owner]
                return LedgerRows(
                    sessions: try Row.fetchAll(db, sql: "SELECT * FROM sessions WHERE owner = ?", arguments: arguments),
                    snapshots: try Row.fetchAll(
                        db, sql: "SELECT * FROM session_snapshots WHERE owner = ? ORDER BY session_id, at, event_id",
                        arguments: arguments),
                    tombstones: try Row.fetchAll(db, sql: "SELECT * FROM session_tombstones WHERE owner = ?", arguments: arguments),
                    posts: try Row.fetchAll(db, sql: "SELECT * FROM posts WHERE owner = ?", arguments: arguments),
                    reactions: try Row.fetchAll(db, sql: "SELECT * FROM reactions WHERE owner = ?", arguments: arguments),
                    deletions: try Row.fetchAll(db, sql: "SELECT * FROM post_deletions WHERE owner = ?", arguments: arguments),
                    seen: try String.fetchAll(db, sql: "SELECT wrap_id FROM seen_wraps WHERE owner = ?", arguments: arguments)
                )
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
    }

    /// `snapshotRows` ordered by session then time, so each membership's history is in order.
    private func sessions(_ sessionRows: [Row], snapshots snapshotRows: [Row]) throws(StoreError) -> [String: SessionLedger.Session] {
        var snapshots: [String: [Membership.Snapshot]] = [:]
        for row in snapshotRows {
            let members = try cipher.open(row["members"] as Data, column: "session_snapshots.members")
            snapshots[row["session_id"], default: []].append(
                Membership.Snapshot(
                    order: EventOrder(createdAt: row["at"], eventID: row["event_id"]),
                    members: Set(members.split(separator: ",").map(String.init))))
        }
        var sessions: [String: SessionLedger.Session] = [:]
        for row in sessionRows {
            let id: String = row["id"]
            sessions[id] = SessionLedger.Session(
                id: id, name: try cipher.open(row["name"] as Data, column: "sessions.name"),
                creator: try cipher.open(row["creator"] as Data, column: "sessions.creator"),
                membership: Membership(snapshots: snapshots[id] ?? []),
                version: EventOrder(createdAt: row["version_at"], eventID: row["version_id"]))
        }
        return sessions
    }

    private func tombstones(_ rows: [Row]) throws(StoreError) -> [String: SessionLedger.Tombstone] {
        var tombstones: [String: SessionLedger.Tombstone] = [:]
        for row in rows {
            tombstones[row["session_id"]] = SessionLedger.Tombstone(
                deletedBy: try cipher.open(row["deleted_by"] as Data, column: "session_tombstones.deleted_by"),
                order: EventOrder(createdAt: row["at"], eventID: row["event_id"]))
        }
        return tombstones
    }

    private func posts(_ rows: [Row]) throws(StoreError) -> [RootPost] {
        var posts: [RootPost] = []
        posts.reserveCapacity(rows.count)
        for row in rows {
            let wrapIDs: String = row["wrap_ids"]
            posts.append(
                RootPost(
                    id: row["id"], sessionID: row["session_id"], author: try cipher.open(row["author"] as Data, column: "posts.author"),
                    url: try cipher.open(row["url"] as Data, column: "posts.url"),
                    note: try cipher.open(optional: row["note"] as Data?, column: "posts.note"),
                    createdAt: row["created_at"], wrapIDs: wrapIDs.isEmpty ? [] : wrapIDs.split(separator: ",").map(String.init),
                    isRead: row["is_read"]))
        }
        return posts
    }

    private func reactions(_ rows: [Row]) throws(StoreError) -> [Reaction] {
        var reactions: [Reaction] = []
        reactions.reserveCapacity(rows.count)
        for row in rows {
            let key = Reaction.Key(
                sessionID: row["session_id"], rootID: row["root_id"],
                emoji: try cipher.open(row["emoji"] as Data, column: "reactions.emoji"),
                sender: try cipher.open(row["sender"] as Data, column: "reactions.sender"))
            reactions.append(
                Reaction(
                    key: key, isActive: row["active"], order: EventOrder(createdAt: row["at"], eventID: row["event_id"]),
                    wrapID: row["wrap_id"]))
        }
        return reactions
    }

    private func deletions(_ rows: [Row]) throws(StoreError) -> [PostDeletion] {
        var deletions: [PostDeletion] = []
        for row in rows {
            deletions.append(
                PostDeletion(
                    rootID: row["root_id"], sessionID: row["session_id"],
                    deletedBy: try cipher.open(row["deleted_by"] as Data, column: "post_deletions.deleted_by"),
                    order: EventOrder(createdAt: row["at"], eventID: row["event_id"])))
        }
        return deletions
    }

    /// Writes what `changes` names, as `ledger` now has it, in one transaction: rows for keys the
    /// ledger holds are written, rows for keys it no longer holds are deleted.
    public func save(_ changes: LedgerChanges, from ledger: LinkstrLedger) throws(StoreError) {
        guard !changes.isEmpty else { return }
        do {
            try database.write { db in
                for id in changes.sessions { try saveSession(id, ledger: ledger, db: db) }
                for id in changes.posts { try savePost(id, ledger: ledger, db: db) }
                for key in changes.reactions { try saveReaction(key, ledger: ledger, db: db) }
                for id in changes.deletions { try saveDeletion(id, ledger: ledger, db: db) }
                let seen = try db.cachedStatement(sql: "INSERT OR IGNORE INTO seen_wraps (owner, wrap_id) VALUES (?, ?)")
                for wrapID in changes.seenWrapIDs { try seen.execute(arguments: [owner, wrapID]) }
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
    }

    private func saveSession(_ id: String, ledger: LinkstrLedger, db: Database) throws {
        try db.execute(sql: "DELETE FROM session_snapshots WHERE owner = ? AND session_id = ?", arguments: [owner, id])
        if let session = ledger.sessions[id] {
            try db.cachedStatement(
                sql: """
                    INSERT INTO sessions (owner, id, name, creator, version_at, version_id) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (owner, id) DO UPDATE SET name = excluded.name, creator = excluded.creator,
                        version_at = excluded.version_at, version_id = excluded.version_id
                    """
            ).execute(arguments: [
                owner, id, cipher.seal(session.name, column: "sessions.name"),
                cipher.seal(session.creator, column: "sessions.creator"), session.version.createdAt, session.version.eventID,
            ])
            let insert = try db.cachedStatement(
                sql: "INSERT INTO session_snapshots (owner, session_id, at, event_id, members) VALUES (?, ?, ?, ?, ?)")
            for snapshot in session.membership.snapshots {
                try insert.execute(arguments: [
                    owner, id, snapshot.order.createdAt, snapshot.order.eventID,
                    cipher.seal(snapshot.members.sorted().joined(separator: ","), column: "session_snapshots.members"),
                ])
            }
        } else {
            try db.execute(sql: "DELETE FROM sessions WHERE owner = ? AND id = ?", arguments: [owner, id])
        }
        if let tombstone = ledger.sessionLedger.tombstones[id] {
            try db.execute(
                sql: """
                    INSERT INTO session_tombstones (owner, session_id, deleted_by, at, event_id) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (owner, session_id) DO UPDATE SET deleted_by = excluded.deleted_by, at = excluded.at, event_id = excluded.event_id
                    """,
                arguments: [
                    owner, id, cipher.seal(tombstone.deletedBy, column: "session_tombstones.deleted_by"), tombstone.order.createdAt,
                    tombstone.order.eventID,
                ])
        }
    }

    private func savePost(_ id: String, ledger: LinkstrLedger, db: Database) throws {
        guard let post = ledger.posts[id] else {
            try db.cachedStatement(sql: "DELETE FROM posts WHERE owner = ? AND id = ?").execute(arguments: [owner, id])
            return
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO posts (owner, id, session_id, author, url, note, created_at, wrap_ids, is_read) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (owner, id) DO UPDATE SET wrap_ids = excluded.wrap_ids, is_read = excluded.is_read
                """
        ).execute(arguments: [
            owner, id, post.sessionID, cipher.seal(post.author, column: "posts.author"), cipher.seal(post.url, column: "posts.url"),
            cipher.seal(optional: post.note, column: "posts.note"), post.createdAt, post.wrapIDs.joined(separator: ","), post.isRead,
        ])
    }

    private func saveReaction(_ key: Reaction.Key, ledger: LinkstrLedger, db: Database) throws {
        let blind = cipher.blindIndex(key.sessionID, key.rootID, key.emoji, key.sender)
        guard let reaction = ledger.reactions[key] else {
            try db.cachedStatement(sql: "DELETE FROM reactions WHERE owner = ? AND key = ?").execute(arguments: [owner, blind])
            return
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO reactions (owner, key, session_id, root_id, emoji, sender, active, at, event_id, wrap_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (owner, key) DO UPDATE SET active = excluded.active, at = excluded.at, event_id = excluded.event_id, wrap_id = excluded.wrap_id
                """
        ).execute(arguments: [
            owner, blind, key.sessionID, key.rootID, cipher.seal(key.emoji, column: "reactions.emoji"),
            cipher.seal(key.sender, column: "reactions.sender"), reaction.isActive, reaction.order.createdAt,
            reaction.order.eventID, reaction.wrapID,
        ])
    }

    private func saveDeletion(_ rootID: String, ledger: LinkstrLedger, db: Database) throws {
        guard let deletion = ledger.deletions[rootID] else {
            try db.execute(sql: "DELETE FROM post_deletions WHERE owner = ? AND root_id = ?", arguments: [owner, rootID])
            return
        }
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO post_deletions (owner, root_id, session_id, deleted_by, at, event_id) VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                owner, rootID, deletion.sessionID, cipher.seal(deletion.deletedBy, column: "post_deletions.deleted_by"),
                deletion.order.createdAt, deletion.order.eventID,
            ])
    }

    // MARK: Local session state

    /// Archive is local and non-destructive: a flag on the session row.
    public func setArchived(_ sessionID: String, _ archived: Bool) throws(StoreError) {
        do {
            try database.write { db in
                try db.execute(sql: "UPDATE sessions SET archived = ? WHERE owner = ? AND id = ?", arguments: [archived, owner, sessionID])
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
    }

    public func archivedSessions() throws(StoreError) -> Set<String> {
        do {
            return Set(
                try database.read { db in
                    try String.fetchAll(db, sql: "SELECT id FROM sessions WHERE owner = ? AND archived = 1", arguments: [owner])
                })
        } catch { throw .database(LinkstrStore.reason(error)) }
    }

    // MARK: Account values

    /// An account value (contacts, relays, watermarks), sealed like every other sensitive column.
    public func value(_ key: String) throws(StoreError) -> String? {
        let data: Data?
        do {
            data = try database.read { db in
                try Data.fetchOne(db, sql: "SELECT value FROM account_values WHERE owner = ? AND key = ?", arguments: [owner, key])
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
        return try cipher.open(optional: data, column: "account_values.\(key)")
    }

    public func setValue(_ value: String?, for key: String) throws(StoreError) {
        do {
            try database.write { db in
                if let value {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO account_values (owner, key, value) VALUES (?, ?, ?)",
                        arguments: [owner, key, cipher.seal(value, column: "account_values.\(key)")])
                } else {
                    try db.execute(sql: "DELETE FROM account_values WHERE owner = ? AND key = ?", arguments: [owner, key])
                }
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
    }

    /// An account value stored as JSON; nil when absent or no longer decodable (a value from an
    /// older shape is treated as never set, not as an error that locks the account out).
    public func decoded<Value: Decodable>(_ type: Value.Type, for key: String) throws(StoreError) -> Value? {
        try value(key).flatMap { try? JSONDecoder().decode(type, from: Data($0.utf8)) }
    }

    /// Stores `value` as JSON (nil removes it).
    public func setEncoded(_ value: (some Encodable)?, for key: String) throws {
        try setValue(try value.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }, for: key)
    }

    /// Erases every row of this owner (logout with clearing, account deletion).
    public func eraseAll() throws(StoreError) {
        do {
            try database.write { db in
                for table in [
                    "sessions", "session_snapshots", "session_tombstones", "posts", "reactions", "post_deletions", "seen_wraps",
                    "account_values",
                ] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE owner = ?", arguments: [owner])
                }
            }
        } catch { throw .database(LinkstrStore.reason(error)) }
    }
}
