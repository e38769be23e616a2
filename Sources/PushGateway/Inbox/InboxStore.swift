package import Foundation
package import Logging
package import NostrProtocol
import PostgresNIO

/// What the inbox relay keeps in PostgreSQL: the wraps it accepted, per recipient.
package struct InboxStore: Sendable {
    package let database: Database
    package let logger: Logger

    package init(database: Database, logger: Logger, maxWrapsPerRecipient: Int = defaultMaxWrapsPerRecipient) {
        self.database = database
        self.logger = logger
        self.maxWrapsPerRecipient = maxWrapsPerRecipient
    }

    /// The NOTIFY channel that carries `"<recipient> <id>"` for every wrap stored, to every
    /// instance's live subscriptions.
    package static let channel = "linkstr_inbox"

    package enum StoreOutcome: Sendable, Equatable {
        case stored
        case duplicate
        case unregistered
        /// The recipient has `maxWrapsPerRecipient` stored already.
        case full
    }

    /// Wraps kept per recipient at most: a stranger filling someone's inbox stops there.
    package static let defaultMaxWrapsPerRecipient = 2_000
    package let maxWrapsPerRecipient: Int

    /// Stores `event` for `recipient` if the recipient has a registered device, once per id, and
    /// tells every instance (NOTIFY, sent when the transaction commits), in one statement.
    package func store(_ event: NostrEvent, recipient: String) async throws -> StoreOutcome {
        let id = event.id.hex
        let json = event.json
        let rows = try await database.query(
            """
            WITH registered AS (SELECT EXISTS (SELECT 1 FROM devices WHERE pubkey = \(recipient)) AS yes),
            room AS (
                SELECT (SELECT count(*) FROM (SELECT 1 FROM inbox_wraps WHERE recipient = \(recipient) LIMIT \(maxWrapsPerRecipient)) AS kept)
                    < \(maxWrapsPerRecipient) AS yes
            ),
            inserted AS (
                INSERT INTO inbox_wraps (id, recipient, created_at, event)
                SELECT \(id), \(recipient), \(event.createdAt), \(json) FROM registered, room WHERE registered.yes AND room.yes
                ON CONFLICT (id) DO NOTHING RETURNING id
            ),
            notified AS (SELECT pg_notify(\(Self.channel), \(recipient) || ' ' || id) FROM inserted)
            SELECT (SELECT yes FROM registered), (SELECT yes FROM room), (SELECT count(*)::int FROM inserted),
                   (SELECT count(*)::int FROM notified)
            """, logger: logger)
        for (registered, room, inserted, _) in try rows.decode((Bool, Bool, Int, Int).self) {
            guard registered else { return .unregistered }
            if inserted > 0 { return .stored }
            // A copy of a stored wrap is a duplicate even when the inbox is full.
            let known = try await database.query("SELECT 1 FROM inbox_wraps WHERE id = \(id)", logger: logger).count > 0
            return known || room ? .duplicate : .full
        }
        return .unregistered
    }

    /// Where a page of stored wraps ends: the next page starts below it (newest first).
    package struct Cursor: Sendable, Equatable {
        var createdAt: Int64
        var id: String
    }

    /// One page of `recipient`'s stored wraps that `part` selects, newest first, below `cursor`:
    /// ids and JSON, and the cursor after the page (nil when it was the last).
    package func page(
        recipient: String, _ part: InboxQuery.Part, after cursor: Cursor?, size: Int
    ) async throws -> (wraps: [(id: String, event: String)], next: Cursor?) {
        let since = part.since ?? Int64.min
        let until = min(part.until ?? Int64.max, cursor?.createdAt ?? Int64.max)
        let belowID = cursor?.id ?? ""
        let rows = try await database.query(
            """
            SELECT id, created_at, event FROM inbox_wraps
            WHERE recipient = \(recipient) AND (\(part.ids)::text[] IS NULL OR id = ANY(\(part.ids)::text[]))
              AND created_at >= \(since) AND created_at <= \(until)
              AND (\(belowID) = '' OR created_at < \(until) OR id > \(belowID))
            ORDER BY created_at DESC, id LIMIT \(size)
            """, logger: logger)
        var wraps: [(id: String, event: String)] = []
        var last: Cursor?
        for (id, createdAt, event) in try rows.decode((String, Int64, String).self) {
            wraps.append((id, event))
            last = Cursor(createdAt: createdAt, id: id)
        }
        return (wraps, wraps.count == size ? last : nil)
    }

    /// One stored wrap (for the live subscriptions of its recipient): its JSON and `created_at`.
    package func wrap(id: String) async throws -> (event: String, createdAt: Int64)? {
        for (event, createdAt) in try await database.query(
            "SELECT event, created_at FROM inbox_wraps WHERE id = \(id)", logger: logger
        ).decode((String, Int64).self) { return (event, createdAt) }
        return nil
    }

    /// NIP-62: everything stored for `pubkey` up to `until` (the request's `created_at`) goes.
    /// Returns how many wraps.
    package func vanish(_ pubkey: String, until: Int64) async throws -> Int {
        // To the end of the request's second: `created_at` has whole seconds, storage does not.
        let cutoff = Date(timeIntervalSince1970: TimeInterval(until + 1))
        return try await database.query(
            "DELETE FROM inbox_wraps WHERE recipient = \(pubkey) AND stored_at < \(cutoff) RETURNING 1", logger: logger
        ).count
    }

    /// Deletes wraps stored longer than `retentionDays` and those of recipients with no device
    /// left (a removal that did not go through the API, a race with one). Returns how many.
    @discardableResult
    package func prune(retentionDays: Int, now: Date = Date()) async throws -> Int {
        let cutoff = now.addingTimeInterval(-Double(retentionDays) * 86_400)
        var removed = try await database.query("DELETE FROM inbox_wraps WHERE stored_at < \(cutoff) RETURNING 1", logger: logger).count
        removed += try await database.query(
            """
            DELETE FROM inbox_wraps w WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = w.recipient) RETURNING 1
            """, logger: logger
        ).count
        return removed
    }
}
