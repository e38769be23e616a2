import Foundation
import PostgresNIO

/// A batch of gift wraps for the inbox relay, as one prepared statement (one round trip, one
/// commit, planned once per connection):
/// 1. each wrap is stored for its recipient if the recipient has a registered device, and fewer
///    than `maxPerRecipient` wraps and `maxBytesPerRecipient` bytes of them stored before the
///    statement, once per id;
/// 2. the stored ones are announced on `channel` (NOTIFY, sent at the commit), up to
///    `notifyLines` "<recipient> <id>" lines a notification;
/// 3. with `pushing`, the stored ones are recorded as real-time sightings from `pushing.relay`,
///    as `RecordWrapsStatement` records the watcher's (the same claim, coalescing, budget and
///    leasing), so that storing a wrap and queueing its push cost one commit, not two.
///
/// Rows: the first carries every input wrap's outcome, in input order, as one letter each (see
/// `Outcome`) and the record's counts; each further row, a job leased for the caller to send.
package struct StoreInboxWrapsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH arrived AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS i(id, recipient, created_at, event, position)
        ), recipients AS (
            -- Wraps and bytes stored are counted in one read of at most `maxPerRecipient` rows:
            -- a recipient with fewer has all of them summed, and one with that many has no room
            -- whatever they weigh, so a full inbox costs a bounded read.
            SELECT r.recipient, EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = r.recipient) AS registered,
                   kept.wraps < $5 AND kept.bytes < $7 AS room
            FROM (SELECT DISTINCT recipient FROM arrived) AS r,
                 LATERAL (SELECT count(*) AS wraps, coalesce(sum(octet_length(w.event)), 0) AS bytes
                          FROM (SELECT event FROM inbox_wraps WHERE recipient = r.recipient LIMIT $5) AS w) AS kept
        ), stored AS (
            INSERT INTO inbox_wraps (id, recipient, created_at, event)
            SELECT DISTINCT ON (i.id) i.id, i.recipient, i.created_at, i.event
            FROM arrived i JOIN recipients r ON r.recipient = i.recipient WHERE r.registered AND r.room
            ORDER BY i.id
            ON CONFLICT (id) DO NOTHING RETURNING id, recipient
        ), notified AS (
            SELECT pg_notify($6, string_agg(recipient || ' ' || id, E'\\n'))
            FROM (SELECT recipient, id, row_number() OVER () - 1 AS n FROM stored) AS s GROUP BY n / $18
        ), input AS (
            SELECT id AS wrap_id, recipient, $9::text AS relay, true AS live, true AS realtime FROM stored WHERE $8
        ), \(RecordWrapsStatement.steps(
            historyRace: "$10", coalesce: "$11", lifetime: "$12", leaseDue: "$13", lease: "$14", budgetOn: "$15", burst: "$16",
            perSecond: "$17", storedBatch: true))
        SELECT (SELECT string_agg(CASE WHEN NOT r.registered THEN 'u'
                                       WHEN i.was_stored THEN 's'
                                       WHEN r.room OR EXISTS (SELECT 1 FROM inbox_wraps w WHERE w.id = i.id) THEN 'd'
                                       ELSE 'f' END, '' ORDER BY i.position)
                -- Whether each arrived wrap was stored, from one sort of both lists by id: a
                -- look-up in `stored` per arrived wrap read all of it each time, the square of
                -- the batch.
                FROM (SELECT u.*, bool_or(u.from_stored) OVER (PARTITION BY u.id) AS was_stored
                      FROM (SELECT id, recipient, position, false AS from_stored FROM arrived
                            UNION ALL SELECT id, NULL, NULL, true FROM stored) u) i
                JOIN recipients r ON r.recipient = i.recipient
                WHERE NOT i.from_stored) AS outcomes,
               (SELECT count(*) FROM notified)::int AS notices, c.claimed, c.queued, c.merged, c.over_budget,
               NULL::bigint AS id, NULL::uuid AS apns_id, NULL::text AS device_token, NULL::text AS pubkey, NULL::text AS apns_environment,
               NULL::text AS topic, NULL::timestamptz AS updated_at, NULL::text AS event_id, NULL::text AS relay, NULL::int AS wrap_count,
               NULL::int AS attempts, NULL::timestamptz AS expires_at, NULL::text AS platform, NULL::text AS push_type, NULL::text AS p256dh,
               NULL::text AS auth_secret
        FROM counts c
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, \(RecordWrapsStatement.leasedColumns)
        FROM \(RecordWrapsStatement.leasedMembers)
        """

    /// How the wraps a batch stores are pushed.
    package struct Pushing: Sendable {
        /// Where the sightings say they were seen (the inbox relay's URL).
        var relay: String
        var coalesceSeconds: Int
        var lifetimeSeconds: Int
        /// Jobs due now come back leased for this long, for the caller to send; nil: none.
        var leaseSeconds: Int?
        /// Each device's alert budget; nil: none.
        var budget: PushBudget?

        package init(relay: String, coalesceSeconds: Int, lifetimeSeconds: Int, leaseSeconds: Int?, budget: PushBudget?) {
            self.relay = relay
            self.coalesceSeconds = coalesceSeconds
            self.lifetimeSeconds = lifetimeSeconds
            self.leaseSeconds = leaseSeconds
            self.budget = budget
        }
    }

    var ids: [String]
    var recipients: [String]
    var createdAt: [Int64]
    var events: [String]
    var maxPerRecipient: Int
    var channel: String
    var maxBytesPerRecipient: Int
    /// nil: the wraps are stored and announced, not pushed.
    var pushing: Pushing?
    /// A NOTIFY payload holds under 8,000 bytes: 60 lines of 130.
    static let notifyLines = 60

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 18)
        bindings.append(ids)
        bindings.append(recipients)
        bindings.append(createdAt)
        bindings.append(events)
        bindings.append(maxPerRecipient)
        bindings.append(channel)
        bindings.append(maxBytesPerRecipient)
        bindings.append(pushing != nil)
        bindings.append(pushing?.relay ?? "")
        bindings.append(Double(WatchSettings.historyRaceSeconds))
        bindings.append(Double(pushing?.coalesceSeconds ?? 0))
        bindings.append(Double(pushing?.lifetimeSeconds ?? 0))
        bindings.append(pushing?.leaseSeconds != nil)
        bindings.append(Double(pushing?.leaseSeconds ?? 0))
        bindings.append(pushing?.budget != nil)
        bindings.append(pushing?.budget?.burst ?? 0)
        bindings.append(pushing?.budget?.perSecond ?? 0)
        bindings.append(Self.notifyLines)
        return bindings
    }

    /// One input wrap's outcome, as the first row spells it.
    enum Outcome: Character {
        case stored = "s"
        case duplicate = "d"
        case unregistered = "u"
        /// The recipient had no room.
        case full = "f"
    }

    /// The first row: the outcomes and the record's counts; any other: a leased job.
    enum Row {
        case outcomes([Outcome], record: WatchStore.RecordResult)
        case leased(ClaimedJob?)
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var columns = RowColumns(row)
        let outcomes = try columns.optional(String.self)
        _ = try columns.optional(Int.self)
        let (claimed, queued, merged, overBudget) = (
            try columns.optional(Int.self), try columns.optional(Int.self), try columns.optional(Int.self), try columns.optional(Int.self)
        )
        if let outcomes {
            return .outcomes(
                outcomes.compactMap(Outcome.init(rawValue:)),
                record: WatchStore.RecordResult(
                    claimed: claimed ?? 0, jobs: queued ?? 0, merged: merged ?? 0, overBudget: overBudget ?? 0))
        }
        return .leased(try RecordWrapsStatement.leasedJob(&columns))
    }
}
