import Foundation
import PostgresNIO

/// A batch of gift wraps seen by the relay watcher, as one prepared statement (one round trip,
/// one transaction):
/// 1. every wrap is claimed in `seen_wraps`; one claimed before (another relay, another instance,
///    before a restart) is a duplicate and goes no further, except that a real-time sighting takes
///    over a claim that only history made in the last `historyRaceSeconds` (`history_until`),
///    also one that a concurrent statement committed after this one began;
/// 2. live, newly claimed wraps become one push per watching device of the recipient, except
///    where the recipient suppressed the wrap (its own self-copy);
/// 3. coalescing: a device that already has an unclaimed relay-watch job gets that job updated
///    (the newest wrap, the count added) instead of a new one;
/// 4. pacing, in one upsert of the device's `device_pacing` row: a new push takes a token from
///    the device's alert budget (`PushBudget`; a device whose budget is spent gets none, counted
///    as over budget) and is scheduled no earlier than the row's `next_at`, which moves
///    `coalesce` seconds past that time;
/// 5. with `leaseDue`, the pushes due at once are stored as one batch in `push_batches`
///    (migration 0021), already claimed (leased, attempt 1), and returned with their devices for
///    the caller to send right away; if it dies first, the lease runs out and any worker claims
///    the batch, as with any batch. Its `next_attempt_at` is its lease's end, so the claim
///    query's index scan stops before it instead of stepping over every batch in flight (see
///    `DeliveryQueue.claim`). The other new pushes (scheduled later, or all of them without
///    `leaseDue`) are jobs in `push_jobs`, where step 3 finds them.
/// Rows are (wrap id, recipient, relay, live, realtime); history rows (`live` false) only claim.
package struct RecordWrapsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT DISTINCT ON (wrap_id, recipient) wrap_id, recipient, relay, live, realtime
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $9::bool[]) AS i(wrap_id, recipient, relay, live, realtime)
            ORDER BY wrap_id, recipient, live DESC, realtime DESC
        ), \(steps(historyRace: "$10", coalesce: "$5", lifetime: "$6", leaseDue: "$7", lease: "$8", budgetOn: "$11", burst: "$12", perSecond: "$13"))
        SELECT c.claimed, c.queued, c.merged, c.over_budget, \(leasedColumns)
        FROM counts c LEFT JOIN (\(leasedMembers)) ON true
        """

    /// The leased members' columns, as `leasedJob` reads them, from `leasedMembers`.
    static let leasedColumns = """
        b.id, m.apns_id, m.device_token, m.pubkey, m.apns_environment, m.topic, m.updated_at, m.wrap_id, m.relay, m.wraps, b.attempts,
        b.expires_at, m.platform, m.push_type, m.p256dh, m.auth_secret
        """

    /// The batch of pushes `steps` leased, a row per member with its device's columns (read once,
    /// in `targets`: joining `devices` again here cost a second probe of its key a wrap).
    static let leasedMembers = "batch b CROSS JOIN members m"

    /// The columns of a device that a leased push is sent with, carried from `targets` to
    /// `members`.
    static func deviceColumns(of alias: String) -> String {
        deviceColumnNames.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    static let deviceColumnNames = ["apns_environment", "topic", "updated_at", "platform", "push_type", "p256dh", "auth_secret"]

    /// The columns of `targets` and `pending`, in order: `targets` must select these.
    static let targetColumnNames = ["device_token", "pubkey", "wrap_id", "relay", "wraps"] + deviceColumnNames

    /// Steps 1 to 5 as the CTEs that follow `input` (wrap_id, recipient, relay, live, realtime,
    /// one row per wrap and recipient) in a WITH list, ending with `counts` (claimed, queued,
    /// merged, over_budget), `members` (the pushes leased to the caller) and `batch` (their batch
    /// row, none when there are none; see `leasedMembers`). Each argument is the SQL for a value
    /// (a parameter), so that another statement can run the same steps on its own input
    /// (`StoreInboxWrapsStatement`).
    ///
    /// `storedBatch`: the input is a batch the same statement just stored (the inbox's), whose
    /// size the generic plan cannot know. A join of it to `claim` was planned as a nested loop
    /// over both, the square of the batch (23 ms at 256), so the claim is a filter instead; and
    /// the merge reads the queued jobs in one pass (see `storedBatchMerge`). The watcher's input,
    /// from `unnest`, keeps the join and the merge it was measured with: the same changes made its
    /// p99 at 5,000 wraps/s worse in four of four alternating runs of `scripts/bench-watch.sh`.
    static func steps(
        historyRace: String, coalesce: String, lifetime: String, leaseDue: String, lease: String, budgetOn: String, burst: String,
        perSecond: String, storedBatch: Bool = false
    ) -> String {
        let claimJoin = storedBatch ? "" : "JOIN claim c ON c.wrap_id = i.wrap_id"
        let claimFilter = storedBatch ? "AND i.wrap_id = ANY (ARRAY(SELECT wrap_id FROM claim))" : ""
        let merge = storedBatch ? storedBatchMerge : watcherMerge
        let refilled = PushBudget.refilledSQL(burst: burst, perSecond: perSecond)
        let targetColumns = targetColumnNames.joined(separator: ", ")
        // `paced`'s rows in the shape of `pending`'s: the device, and nothing else known.
        let pacedAsTargets = targetColumnNames.map { $0 == "device_token" ? $0 : "NULL" }.joined(separator: ", ")
        return """
            claim AS (
                -- A wrap is claimed when its row is new, or when a real-time sighting takes over a
                -- history claim still in its race window. The take-over is the upsert's: it judges
                -- the latest committed row, so a history claim committed by another statement after
                -- this one began (invisible to an UPDATE here) still gives way, and of two real-time
                -- statements only the first does. One sorted pass, so concurrent statements lock in
                -- one order. Rows this statement's snapshot already shows as settled (seen for good,
                -- or only history sightings here) are left out first: an upsert locks the row it
                -- conflicts with even when it changes nothing, and a settled row can never be
                -- claimed again, so a duplicate costs a read instead of a lock (and its WAL), and
                -- waits for no one.
                INSERT INTO seen_wraps AS s (wrap_id, history_until)
                SELECT g.wrap_id, g.history_until
                FROM (SELECT wrap_id, bool_or(realtime) AS realtime,
                             CASE WHEN bool_or(live) THEN NULL ELSE now() + make_interval(secs => \(historyRace)) END AS history_until
                      FROM input GROUP BY wrap_id) AS g
                WHERE NOT EXISTS (SELECT 1 FROM seen_wraps o WHERE o.wrap_id = g.wrap_id
                                    AND (NOT g.realtime OR o.history_until IS NULL OR o.history_until <= now()))
                ORDER BY g.wrap_id
                ON CONFLICT (wrap_id) DO UPDATE SET history_until = NULL
                WHERE s.history_until > now() AND EXCLUDED.wrap_id = ANY (ARRAY(SELECT wrap_id FROM input WHERE realtime))
                RETURNING s.wrap_id
            ), targets AS (
                -- The columns of `targetColumnNames`, in its order.
                SELECT DISTINCT ON (d.device_token) d.device_token, d.pubkey, i.wrap_id, i.relay,
                       count(*) OVER (PARTITION BY d.device_token) AS wraps,
                       \(deviceColumns(of: "d"))
                FROM input i
                \(claimJoin)
                -- A VoIP token takes calls only: PushKit requires every push to it to report one.
                JOIN devices d ON d.pubkey = i.recipient AND d.relay_watch AND d.push_type = 'alert'
                WHERE i.live \(claimFilter)
                  AND NOT EXISTS (SELECT 1 FROM push_suppressions s WHERE s.pubkey = i.recipient AND s.event_id = i.wrap_id AND s.expires_at > now())
                ORDER BY d.device_token, i.wrap_id
            ), \(merge)
            ), pending AS (
                SELECT t.* FROM targets t WHERE NOT EXISTS (SELECT 1 FROM merged m WHERE m.device_token = t.device_token)
            ), paced AS (
                -- One upsert of each pending device's pacing row (migration 0023): the push is due
                -- at the row's window (`at`, read back from the moved window) and takes a token
                -- from its budget; a device whose budget is spent keeps its row as it was and
                -- returns nothing. Without a budget the tokens are left alone, and a new row's
                -- bucket starts full (charged last at `epoch`) for when a budget is set.
                INSERT INTO device_pacing AS b (device_token, tokens, updated_at, next_at)
                SELECT device_token, CASE WHEN \(budgetOn) THEN \(burst) - 1 ELSE 0 END,
                       CASE WHEN \(budgetOn) THEN now() ELSE 'epoch' END, now() + make_interval(secs => \(coalesce))
                FROM pending ORDER BY device_token
                ON CONFLICT (device_token) DO UPDATE SET
                    tokens = CASE WHEN \(budgetOn) THEN \(refilled) - 1 ELSE b.tokens END,
                    updated_at = CASE WHEN \(budgetOn) THEN greatest(b.updated_at, now()) ELSE b.updated_at END,
                    next_at = greatest(now(), coalesce(b.next_at, now())) + make_interval(secs => \(coalesce))
                WHERE NOT \(budgetOn) OR \(refilled) >= 1
                RETURNING device_token, next_at - make_interval(secs => \(coalesce)) AS at
            ), admitted AS (
                -- The pending pushes that `paced` let through, each with its window (`at`), and
                -- leased_until: set when the push is due now and the caller sends it at once.
                -- Matched by one sort of both lists (a window over the device), not by a join: the
                -- generic plan guesses the input at 10 rows, and planned the join as a nested loop
                -- that read all of `paced` once for each pending push, the square of the batch
                -- (a 256-wrap statement took 14.8–15.0 ms with it, 12.3–12.5 with the sort).
                SELECT \(targetColumns), at,
                       CASE WHEN \(leaseDue) AND at <= now() THEN now() + make_interval(secs => \(lease)) END AS leased_until
                FROM (
                    SELECT u.*, max(u.paced_at) OVER (PARTITION BY u.device_token) AS at
                    FROM (SELECT \(targetColumns), NULL::timestamptz AS paced_at, true AS is_pending FROM pending
                          UNION ALL
                          SELECT \(pacedAsTargets), at, false FROM paced) u
                ) w
                WHERE is_pending AND at IS NOT NULL
            ), jobs AS (
                -- The pushes that wait (a coalescing window, or direct delivery at its limit): a job
                -- each, which a later wrap to the same device merges into.
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, wrap_count,
                                       next_attempt_at, expires_at, attempts)
                SELECT gen_random_uuid(), device_token, pubkey, 'gift_wrap', wrap_id, '', relay, wraps, at,
                       at + make_interval(secs => \(lifetime)), 0
                FROM admitted WHERE leased_until IS NULL
                RETURNING device_token
            ), members AS (
                -- The pushes due now, sent at once by the caller: one batch row for all of them
                -- (migration 0021), each device with its own apns-id (kept across retries), wrap,
                -- relay and count.
                SELECT gen_random_uuid() AS apns_id, device_token, pubkey, wrap_id, relay, wraps::int AS wraps,
                       \(deviceColumns(of: "admitted"))
                FROM admitted WHERE leased_until IS NOT NULL
            ), batch AS (
                INSERT INTO push_batches (notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids, event_ids, relays,
                                          wrap_counts, size, attempts, next_attempt_at, expires_at, created_at)
                SELECT 'gift_wrap', '', '', array_agg(device_token), array_agg(pubkey), array_agg(apns_id), array_agg(wrap_id),
                       -- Leased: due again only when the lease, the one every member took, runs out.
                       array_agg(relay), array_agg(wraps), count(*), 1, now() + make_interval(secs => \(lease)),
                       now() + make_interval(secs => \(lifetime)),
                       -- When the devices had been read (see `EnqueuePushStatement`): a claim after the
                       -- lease skips a device registered again since.
                       clock_timestamp()
                FROM members
                HAVING count(*) > 0
                RETURNING id, attempts, expires_at
            ), counts AS (
                SELECT (SELECT count(*) FROM claim)::int AS claimed, (SELECT count(*) FROM jobs)::int + (SELECT count(*) FROM members)::int AS queued,
                       (SELECT count(*) FROM merged)::int AS merged,
                       (SELECT count(*) FROM pending)::int - (SELECT count(*) FROM admitted)::int AS over_budget
            )
            """
    }

    /// The merge into a device's queued job, for the watcher's batches. The array condition
    /// makes the jobs a probe of push_jobs_queued_device_idx per target: a plain join was planned
    /// (generically) as a hash join over a scan of the whole queue. Only queued jobs can take a
    /// merge (`NOT direct` also lets the partial index serve).
    static let watcherMerge = """
        merged AS (
            UPDATE push_jobs j SET event_id = t.wrap_id, relay = t.relay, wrap_count = j.wrap_count + t.wraps
            FROM targets t
            WHERE j.device_token = ANY (ARRAY(SELECT device_token FROM targets)) AND j.device_token = t.device_token
              AND NOT j.direct AND j.notification_type = 'gift_wrap' AND j.attempts = 0 AND j.locked_until IS NULL
            RETURNING j.device_token
        """

    /// The merge for a stored batch: the probe per target above re-sorts its array (every
    /// target) on each rescan, the square of the batch (10–27 ms at 256), so the targets that
    /// have a queued job are found in one read first, and the merge's array holds only those.
    static let storedBatchMerge = """
        queued AS MATERIALIZED (
            -- The targets that have a queued job, in one read of push_jobs_queued_device_idx by
            -- the array (a plain join was planned, generically, as a hash join over a scan of the
            -- whole queue). Only queued jobs can take a merge (`NOT direct` also lets the partial
            -- index serve).
            SELECT DISTINCT j.device_token FROM push_jobs j
            WHERE j.device_token = ANY (ARRAY(SELECT device_token FROM targets))
              AND NOT j.direct AND j.notification_type = 'gift_wrap' AND j.attempts = 0 AND j.locked_until IS NULL
        ), merged AS (
            -- The array condition keeps the jobs a read of the index by key. It holds only the
            -- targets found above, usually none: an index scan sorts its array afresh on every
            -- rescan, so an array of every target, read once per target, cost the square of the
            -- batch (10 ms at 256 targets). The conditions again: a job claimed since is left alone.
            UPDATE push_jobs j SET event_id = t.wrap_id, relay = t.relay, wrap_count = j.wrap_count + t.wraps
            FROM targets t
            WHERE j.device_token = ANY (ARRAY(SELECT device_token FROM queued)) AND j.device_token = t.device_token
              AND NOT j.direct AND j.notification_type = 'gift_wrap' AND j.attempts = 0 AND j.locked_until IS NULL
            RETURNING j.device_token
        """

    var wrapIDs: [String]
    var recipients: [String]
    var relays: [String]
    var live: [Bool]
    var realtime: [Bool]
    var historyRaceSeconds: Int
    var coalesceSeconds: Int
    var lifetimeSeconds: Int
    var leaseDue: Bool
    var leaseSeconds: Int
    /// Each device's alert budget; nil: none.
    var budget: PushBudget?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 13)
        bindings.append(wrapIDs)
        bindings.append(recipients)
        bindings.append(relays)
        bindings.append(live)
        bindings.append(Double(coalesceSeconds))
        bindings.append(Double(lifetimeSeconds))
        bindings.append(leaseDue)
        bindings.append(Double(leaseSeconds))
        bindings.append(realtime)
        bindings.append(Double(historyRaceSeconds))
        bindings.append(budget != nil)
        bindings.append(budget?.burst ?? 0)
        bindings.append(budget?.perSecond ?? 0)
        return bindings
    }

    /// The counts (the same on every row) and, when the row carries one, a leased job.
    struct Row {
        var claimed: Int
        var queued: Int
        var merged: Int
        var overBudget: Int
        var job: ClaimedJob?
    }

    /// A leased gift-wrap push, a member of its statement's batch, from the row's job columns,
    /// with the wrap's `event_id, relay, wrap_count` between the device's and the lease's
    /// (`StoreInboxWrapsStatement` returns the same columns).
    static func leasedJob(_ columns: inout RowColumns) throws -> ClaimedJob? {
        try ClaimedJob(leasedFrom: &columns, inBatch: true) { columns in
            (wrapID: try columns.optional(String.self), relay: try columns.optional(String.self), count: try columns.optional(Int.self))
        } notification: { pubkey, wrap in
            wrap.wrapID.map { .giftWrap(wrapID: $0, relay: wrap.relay ?? "", count: wrap.count ?? 1, recipient: pubkey) }
        }
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var columns = RowColumns(row)
        let (claimed, queued, merged, overBudget) = (
            try columns.next(Int.self), try columns.next(Int.self), try columns.next(Int.self), try columns.next(Int.self)
        )
        let job = try Self.leasedJob(&columns)
        return Row(claimed: claimed, queued: queued, merged: merged, overBudget: overBudget, job: job)
    }
}
