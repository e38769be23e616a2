package import Foundation
package import Logging
package import NostrProtocol
import PostgresNIO

/// What the inbox relay keeps in PostgreSQL: the wraps it accepted, per recipient.
package struct InboxStore: Sendable {
    package let database: Database
    package let logger: Logger

    package init(
        database: Database, logger: Logger, maxWrapsPerRecipient: Int = defaultMaxWrapsPerRecipient,
        maxBytesPerRecipient: Int = defaultMaxBytesPerRecipient
    ) {
        self.database = database
        self.logger = logger
        self.maxWrapsPerRecipient = maxWrapsPerRecipient
        self.maxBytesPerRecipient = maxBytesPerRecipient
    }

    /// The NOTIFY channel that carries a line `"<recipient> <id>"` for every wrap stored (up to 60
    /// lines a notification), to every instance's live subscriptions.
    package static let channel = "linkstr_inbox"

    package enum StoreOutcome: Sendable, Equatable {
        case stored
        case duplicate
        case unregistered
        /// The recipient has `maxWrapsPerRecipient` wraps or `maxBytesPerRecipient` bytes stored already.
        case full
    }

    /// Wraps kept per recipient at most: a stranger filling someone's inbox stops there.
    package static let defaultMaxWrapsPerRecipient = 2_000
    package let maxWrapsPerRecipient: Int
    /// Bytes of wraps (their JSON) kept per recipient at most: without it, 2,000 wraps of the
    /// largest size accepted (64 KiB) would let a stranger park 128 MiB on one free key. A gift
    /// wrap of a linkstr post is 1 to 3 KB, so the count binds first for real traffic.
    package static let defaultMaxBytesPerRecipient = 8 * 1024 * 1024
    package let maxBytesPerRecipient: Int

    /// Stores `event` for `recipient` if the recipient has a registered device, once per id, and
    /// tells every instance (NOTIFY, sent when the transaction commits). Not pushed.
    package func store(_ event: NostrEvent, recipient: String) async throws -> StoreOutcome {
        try await store([(event, recipient)], pushing: nil).outcomes[0]
    }

    /// Stores each wrap for its recipient, as `store(_:recipient:)` does, and with `pushing`
    /// queues the pushes for the wraps stored now, all in one statement: one round trip and one
    /// commit for the whole batch (a commit that NOTIFYs takes a lock every instance's commits
    /// share). The outcomes are in the order of `wraps`; `record` says what was queued, and holds
    /// the jobs leased to the caller (`pushing.leaseSeconds`).
    ///
    /// Whether a recipient has room is judged on what was stored before the batch, so a batch may
    /// take a recipient at most its own size past `maxWrapsPerRecipient` (and its own bytes past
    /// `maxBytesPerRecipient`). Two copies of one wrap in a batch are both `stored` (the push is
    /// claimed once, by wrap id). Nothing is stored or queued when it throws.
    package func store(
        _ wraps: [(event: NostrEvent, recipient: String)], pushing: StoreInboxWrapsStatement.Pushing?
    ) async throws -> (outcomes: [StoreOutcome], record: WatchStore.RecordResult) {
        let empty = WatchStore.RecordResult(claimed: 0, jobs: 0, merged: 0)
        guard !wraps.isEmpty else { return ([], empty) }
        let statement = StoreInboxWrapsStatement(
            ids: wraps.map(\.event.id.hex), recipients: wraps.map(\.recipient), createdAt: wraps.map(\.event.createdAt),
            events: wraps.map(\.event.json), maxPerRecipient: maxWrapsPerRecipient, channel: Self.channel,
            maxBytesPerRecipient: maxBytesPerRecipient, pushing: pushing)
        // A device removed mid-statement (23503) or a deadlock rolls the statement back as a whole.
        return try await GatewayStore.retryingTransient {
            var outcomes: [StoreOutcome] = []
            var record = empty
            for row in try await database.execute(statement, logger: logger) {
                switch row {
                case .outcomes(let letters, let counts):
                    outcomes = letters.map(StoreOutcome.init)
                    record = counts
                case .leased(let job):
                    if let job { record.leased.append(job) }
                }
            }
            record.leasedDue = pushing?.leaseSeconds != nil
            guard outcomes.count == wraps.count else {
                throw InboxStoreError.outcomesMissing(expected: wraps.count, got: outcomes.count)
            }
            return (outcomes, record)
        }
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

    /// The wraps stored for `recipients` since `since`, oldest first, at most `limit`: what a
    /// lost LISTEN connection did not announce.
    package func stored(for recipients: [String], since: Date, limit: Int) async throws -> [(
        recipient: String, id: String, createdAt: Int64, event: String
    )] {
        var wraps: [(recipient: String, id: String, createdAt: Int64, event: String)] = []
        for (recipient, id, createdAt, event) in try await database.query(
            """
            SELECT recipient, id, created_at, event FROM inbox_wraps
            WHERE recipient = ANY(\(recipients)) AND stored_at >= \(since) ORDER BY stored_at LIMIT \(limit)
            """, logger: logger
        ).decode((String, String, Int64, String).self) { wraps.append((recipient, id, createdAt, event)) }
        return wraps
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

extension InboxStore.StoreOutcome {
    /// The `outcome` label of `linkstr_inbox_events_total`: the case's name, spelled out, since
    /// interpolating an enum finds its name by reflection, on every stored wrap.
    var metricLabel: String {
        switch self {
        case .stored: "stored"
        case .duplicate: "duplicate"
        case .unregistered: "unregistered"
        case .full: "full"
        }
    }

    init(_ outcome: StoreInboxWrapsStatement.Outcome) {
        switch outcome {
        case .stored: self = .stored
        case .duplicate: self = .duplicate
        case .unregistered: self = .unregistered
        case .full: self = .full
        }
    }
}

/// A batch's statement answered for fewer wraps than it was given.
package enum InboxStoreError: Error, Equatable {
    case outcomesMissing(expected: Int, got: Int)
}
