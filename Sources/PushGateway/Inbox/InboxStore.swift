package import Foundation
package import Logging
package import NostrProtocol
import PostgresNIO

/// What the inbox relay keeps in PostgreSQL: the wraps it accepted, per recipient.
package struct InboxStore: Sendable {
    package let database: Database
    package let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The NOTIFY channel that carries `"<recipient> <id>"` for every wrap stored, to every
    /// instance's live subscriptions.
    package static let channel = "linkstr_inbox"

    package enum StoreOutcome: Sendable, Equatable {
        case stored
        case duplicate
        case unregistered
    }

    /// Stores `event` for `recipient` if the recipient has a registered device, once per id, and
    /// tells every instance (NOTIFY, sent when the transaction commits), in one statement.
    package func store(_ event: NostrEvent, recipient: String) async throws -> StoreOutcome {
        let id = event.id.hex
        let json = event.json
        let rows = try await database.query(
            """
            WITH registered AS (SELECT EXISTS (SELECT 1 FROM devices WHERE pubkey = \(recipient)) AS yes),
            inserted AS (
                INSERT INTO inbox_wraps (id, recipient, created_at, event)
                SELECT \(id), \(recipient), \(event.createdAt), \(json) FROM registered WHERE yes
                ON CONFLICT (id) DO NOTHING RETURNING id
            ),
            notified AS (SELECT pg_notify(\(Self.channel), \(recipient) || ' ' || id) FROM inserted)
            SELECT (SELECT yes FROM registered), (SELECT count(*)::int FROM inserted), (SELECT count(*)::int FROM notified)
            """, logger: logger)
        for (registered, inserted, _) in try rows.decode((Bool, Int, Int).self) {
            guard registered else { return .unregistered }
            return inserted > 0 ? .stored : .duplicate
        }
        return .unregistered
    }

    /// The stored wraps `query` selects, each once, newest first per filter.
    package func wraps(_ query: InboxQuery) async throws -> [String] {
        var seen = Set<String>()
        var events: [String] = []
        for part in query.parts where part.limit > 0 {
            let since = part.since ?? Int64.min
            let until = part.until ?? Int64.max
            let rows = try await database.query(
                """
                SELECT id, event FROM inbox_wraps
                WHERE recipient = \(query.recipient) AND (\(part.ids)::text[] IS NULL OR id = ANY(\(part.ids)::text[]))
                  AND created_at >= \(since) AND created_at <= \(until)
                ORDER BY created_at DESC, id LIMIT \(part.limit)
                """, logger: logger)
            for (id, event) in try rows.decode((String, String).self) where seen.insert(id).inserted { events.append(event) }
        }
        return events
    }

    /// One stored wrap (for the live subscriptions of its recipient): its JSON and `created_at`.
    package func wrap(id: String) async throws -> (event: String, createdAt: Int64)? {
        for (event, createdAt) in try await database.query(
            "SELECT event, created_at FROM inbox_wraps WHERE id = \(id)", logger: logger
        ).decode((String, Int64).self) { return (event, createdAt) }
        return nil
    }

    /// NIP-62: everything stored for `pubkey` goes. Returns how many wraps.
    package func vanish(_ pubkey: String) async throws -> Int {
        try await database.query("DELETE FROM inbox_wraps WHERE recipient = \(pubkey) RETURNING 1", logger: logger).count
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
