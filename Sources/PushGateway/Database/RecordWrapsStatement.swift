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
///    (the newest wrap, the count added) instead of a new one; a new job is scheduled no earlier
///    than the device's `watch_coalesce.next_at`, which moves `coalesce` seconds past it.
/// 4. a new job takes a token from its device's alert budget (`PushBudget`); a device whose
///    budget is spent gets none (counted as over budget);
/// 5. with `leaseDue`, jobs due at once are inserted already claimed (leased, attempt 1) and
///    returned with their device, for the caller to send right away; if it dies first, the lease
///    runs out and any worker claims them, as with any job. Such a job's `next_attempt_at` is its
///    lease's end, so the claim query's index scan stops before it instead of stepping over
///    every job in flight (see `DeliveryQueue.claim`).
/// Rows are (wrap id, recipient, relay, live, realtime); history rows (`live` false) only claim.
package struct RecordWrapsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT DISTINCT ON (wrap_id, recipient) wrap_id, recipient, relay, live, realtime
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $9::bool[]) AS i(wrap_id, recipient, relay, live, realtime)
            ORDER BY wrap_id, recipient, live DESC, realtime DESC
        ), \(steps(historyRace: "$10", coalesce: "$5", lifetime: "$6", leaseDue: "$7", lease: "$8", budgetOn: "$11", burst: "$12", perSecond: "$13"))
        SELECT c.claimed, c.queued, c.merged, c.over_budget, j.id, j.apns_id, j.device_token, j.pubkey, d.apns_environment, d.topic, d.updated_at,
               j.event_id, j.relay, j.wrap_count, j.attempts, j.expires_at, d.platform, d.push_type, d.p256dh, d.auth_secret
        FROM counts c LEFT JOIN (jobs j JOIN devices d ON d.device_token = j.device_token) ON j.locked_until IS NOT NULL
        """

    /// Steps 1 to 5 as the CTEs that follow `input` (wrap_id, recipient, relay, live, realtime,
    /// one row per wrap and recipient) in a WITH list, ending with `counts` (claimed, queued,
    /// merged, over_budget) and `jobs` (each new job; leased ones have `locked_until`). Each
    /// argument is the SQL for a value (a parameter), so that another statement can run the same
    /// steps on its own input (`StoreInboxWrapsStatement`).
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
                SELECT DISTINCT ON (d.device_token) d.device_token, d.pubkey, i.wrap_id, i.relay,
                       count(*) OVER (PARTITION BY d.device_token) AS wraps
                FROM input i
                \(claimJoin)
                -- A VoIP token takes calls only: PushKit requires every push to it to report one.
                JOIN devices d ON d.pubkey = i.recipient AND d.relay_watch AND d.push_type = 'alert'
                WHERE i.live \(claimFilter)
                  AND NOT EXISTS (SELECT 1 FROM push_suppressions s WHERE s.pubkey = i.recipient AND s.event_id = i.wrap_id AND s.expires_at > now())
                ORDER BY d.device_token, i.wrap_id
            ), \(merge)
            ), scheduled AS (
                -- leased_until: set when the job is due now and the caller sends it at once.
                SELECT s.*, CASE WHEN \(leaseDue) AND s.at <= now() THEN now() + make_interval(secs => \(lease)) END AS leased_until
                FROM (
                    SELECT t.device_token, t.pubkey, t.wrap_id, t.relay, t.wraps, greatest(now(), coalesce(w.next_at, now())) AS at
                    FROM targets t LEFT JOIN watch_coalesce w ON w.device_token = t.device_token
                    WHERE NOT EXISTS (SELECT 1 FROM merged m WHERE m.device_token = t.device_token)
                ) s
            ), charged AS (
                -- A new alert takes a token from its device's budget (a merge adds to an alert already
                -- counted).
                \(PushBudget.chargeSQL(devicesFrom: "scheduled", enabled: budgetOn, burst: burst, perSecond: perSecond))
            ), jobs AS (
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, wrap_count,
                                       next_attempt_at, expires_at, locked_until, attempts, direct)
                SELECT gen_random_uuid(), device_token, pubkey, 'gift_wrap', wrap_id, '', relay, wraps,
                       coalesce(leased_until, at), at + make_interval(secs => \(lifetime)), leased_until,
                       CASE WHEN leased_until IS NULL THEN 0 ELSE 1 END, leased_until IS NOT NULL
                FROM scheduled s
                WHERE NOT \(budgetOn) OR EXISTS (SELECT 1 FROM charged c WHERE c.device_token = s.device_token)
                RETURNING id, apns_id, device_token, pubkey, event_id, relay, wrap_count, attempts, expires_at, next_attempt_at, locked_until
            ), coalesced AS (
                INSERT INTO watch_coalesce (device_token, next_at)
                -- A leased job was due now; its next_attempt_at is its lease's end.
                SELECT device_token, (CASE WHEN locked_until IS NULL THEN next_attempt_at ELSE now() END) + make_interval(secs => \(coalesce)) FROM jobs
                ON CONFLICT (device_token) DO UPDATE SET next_at = EXCLUDED.next_at
                RETURNING 1
            ), counts AS (
                SELECT (SELECT count(*) FROM claim)::int AS claimed, (SELECT count(*) FROM jobs)::int AS queued,
                       (SELECT count(*) FROM merged)::int AS merged, (SELECT count(*) FROM coalesced)::int AS scheduled,
                       (SELECT count(*) FROM scheduled)::int - (SELECT count(*) FROM jobs)::int AS over_budget
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

    /// A leased gift-wrap push from the row's job columns, with the wrap's `event_id, relay,
    /// wrap_count` between the device's and the lease's (`StoreInboxWrapsStatement` returns the
    /// same columns).
    static func leasedJob(_ columns: inout RowColumns) throws -> ClaimedJob? {
        try ClaimedJob(leasedFrom: &columns) { columns in
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
