package import Foundation
package import GatewayWire
package import PostgresNIO

/// `POST /v1/push` as one prepared statement: the replay key, dedupe rows per (event, type,
/// recipient) and one batch row holding every eligible device (`push_batches`, migration 0019), in
/// one round trip and one transaction. Everything after `replay` depends on the key being new. The
/// sender is never a recipient; devices whose owner archived the conversation are left out. As in
/// the reference service, a recipient counts (and gets a dedupe row) only when a device of theirs
/// is in the batch: not the sender, has a device, the conversation not archived, not already
/// deduped. Each device takes a token from its budget (`PushBudget`, table `device_pacing`); a
/// device whose budget is spent is left out.
///
/// With `leaseSeconds`, the batch is inserted already claimed (leased, attempt 1) and its members
/// are returned with their devices, for this instance to send at once (`DirectDelivery`), as the
/// relay watcher does; its `next_attempt_at` is the lease's end, so the claim's index scan stops
/// before it, and if this instance dies first the batch becomes due when the lease runs out.
///
/// Rows: `(replay fresh 1/0, recipients, devices, over budget)` on every row, plus one leased
/// member per row (a single row without one when nothing was leased).
package struct EnqueuePushStatement: PostgresPreparedStatement {
    package static let sql = """
        WITH replay AS (
            INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
        ), candidates AS (
            -- Every device a job could go to: recipients other than the sender, their devices
            -- (one index look-up per recipient), the conversation not archived by the owner, and
            -- what is left of the device's budget (a device without a row has a full bucket).
            -- The generic plan (the one a prepared statement gets after five runs) guesses the
            -- unnest at 200 rows and hashes a sequential scan of every device; OFFSET 0 keeps the
            -- planner from flattening the LATERAL subquery into that join.
            SELECT d.device_token, d.pubkey, d.apns_environment, d.topic, d.updated_at, d.platform, d.push_type, d.p256dh, d.auth_secret,
                   NOT $13 OR coalesce(b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * $15, $14) >= 1 AS within_budget
            FROM (SELECT DISTINCT r AS pubkey FROM unnest($4::text[]) AS r WHERE r <> $1 AND EXISTS (SELECT 1 FROM replay)) rc
            CROSS JOIN LATERAL (SELECT * FROM devices WHERE pubkey = rc.pubkey OFFSET 0) d
            -- The budget too is looked up per device (LATERAL, OFFSET 0): budgets are pruned once
            -- full, so the table can be analyzed nearly empty after a quiet hour, and a join
            -- planned on those figures hashed a sequential scan of every budget for each push.
            LEFT JOIN LATERAL (SELECT b.tokens, b.updated_at FROM device_pacing b WHERE $13 AND b.device_token = d.device_token OFFSET 0) b ON true
            -- The archive too is probed per device (OFFSET 0): as an anti join it could be
            -- planned as a read of every archived conversation for each push (DevicePlanTests).
            WHERE NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = d.pubkey AND a.conversation_id = $7 OFFSET 0)
              -- A relay-watch device gets the watcher's alert instead (a VoIP token never does).
              AND NOT (d.relay_watch AND $11 AND d.push_type = 'alert')
              -- A VoIP token takes calls only: PushKit requires every push to it to report one. A
              -- call goes to a user's VoIP tokens instead of their APNs alert tokens, and to the
              -- alert tokens of a user who has none. OFFSET 0 keeps that check a look-up by pubkey:
              -- without it the planner may hash every VoIP device instead, a sequential scan of
              -- all devices for each call (DevicePlanTests).
              AND CASE WHEN $6 = 'incoming_call'
                  THEN d.push_type = 'voip' OR d.platform <> 'apns'
                       OR NOT EXISTS (SELECT 1 FROM devices v WHERE v.pubkey = d.pubkey AND v.push_type = 'voip' OFFSET 0)
                  ELSE d.push_type = 'alert' END
        ), fresh AS (
            -- Dedupe rows only for recipients who get a job: a push to pubkeys without devices
            -- stores nothing but its replay key.
            INSERT INTO push_dedupe (event_id, notification_type, recipient)
            SELECT $5, $6, pubkey FROM (SELECT DISTINCT pubkey FROM candidates WHERE within_budget) c ORDER BY pubkey
            ON CONFLICT DO NOTHING RETURNING recipient
        ), targets AS (
            SELECT c.* FROM candidates c JOIN fresh f ON f.recipient = c.pubkey WHERE c.within_budget
        ), charged AS (
            -- A token from each target's budget; a push that loses the race for a device's last
            -- token leaves a dedupe row without a job.
            \(PushBudget.chargeSQL(devicesFrom: "targets", enabled: "$13", burst: "$14", perSecond: "$15"))
        ), members AS (
            -- The devices the push goes to, each with its apns-id (kept across retries).
            SELECT t.device_token, t.pubkey, gen_random_uuid() AS apns_id FROM targets t
            WHERE NOT $13 OR EXISTS (SELECT 1 FROM charged c WHERE c.device_token = t.device_token)
        ), batch AS (
            -- One row for the whole push (migration 0019): the payload once, the devices as
            -- aligned arrays. No row when no device is left.
            INSERT INTO push_batches (notification_type, event_id, conversation_id, emoji, post_id, background,
                                      device_tokens, pubkeys, apns_ids, size, attempts, next_attempt_at, expires_at, created_at)
            SELECT $6, $5, $7, $8, $9, $16, array_agg(device_token), array_agg(pubkey), array_agg(apns_id), count(*),
                   -- $12, the lease, is NULL when the batch is queued for the delivery loops.
                   CASE WHEN $12::float8 IS NULL THEN 0 ELSE 1 END, coalesce(now() + make_interval(secs => $12), now()),
                   now() + make_interval(secs => $10),
                   -- When the devices had been read, not when the transaction began: the claim
                   -- skips a device registered after this (`ClaimBatchesQuery`), and one that
                   -- registered in between is in the batch.
                   clock_timestamp()
            FROM members
            HAVING count(*) > 0
            RETURNING id, attempts, expires_at
        ), counts AS (
            -- Over budget: devices a push to a not yet deduped recipient would have reached.
            SELECT (SELECT count(*) FROM replay)::int AS fresh, (SELECT count(DISTINCT pubkey) FROM members)::int AS recipients,
                   (SELECT count(*) FROM members)::int AS jobs,
                   (SELECT count(*) FROM candidates c WHERE NOT c.within_budget
                      -- Probed per candidate by the whole key (OFFSET 0), never hashed from a scan.
                      AND NOT EXISTS (SELECT 1 FROM push_dedupe p WHERE p.event_id = $5 AND p.notification_type = $6 AND p.recipient = c.pubkey OFFSET 0))::int
                   + (SELECT count(*) FROM targets)::int - (SELECT count(*) FROM members)::int AS over_budget
        )
        SELECT c.fresh, c.recipients, c.jobs, c.over_budget, l.id, l.apns_id, l.device_token, l.pubkey, l.apns_environment, l.topic,
               l.updated_at, l.attempts, l.expires_at, l.platform, l.push_type, l.p256dh, l.auth_secret
        FROM counts c LEFT JOIN (
            -- The members, when the batch was queued leased for this instance.
            SELECT b.id, m.apns_id, m.device_token, t.pubkey, t.apns_environment, t.topic, t.updated_at, b.attempts, b.expires_at,
                   t.platform, t.push_type, t.p256dh, t.auth_secret
            FROM batch b CROSS JOIN members m JOIN targets t ON t.device_token = m.device_token
            WHERE b.attempts > 0
        ) l ON true
        """

    var sender: String
    var replayKey: String
    var replayExpires: Date
    var recipients: [String]
    var eventID: String
    var notificationType: NotificationType
    var conversationID: String
    var emoji: String?
    var postID: String?
    var lifetimeSeconds: Int
    var skipRelayWatchDevices: Bool
    /// Jobs are inserted leased for this long and returned, or (nil) queued for the delivery loops.
    var leaseSeconds: Int?
    /// Each device's alert budget; nil: none.
    var budget: PushBudget?
    /// A background refresh rather than an alert.
    var background: Bool

    package init(
        sender: String, replayKey: String, replayExpires: Date, recipients: [String], eventID: String, notificationType: NotificationType,
        conversationID: String, emoji: String? = nil, postID: String? = nil, lifetimeSeconds: Int, skipRelayWatchDevices: Bool,
        leaseSeconds: Int? = nil, budget: PushBudget? = nil, background: Bool = false
    ) {
        self.sender = sender
        self.replayKey = replayKey
        self.replayExpires = replayExpires
        self.recipients = recipients
        self.eventID = eventID
        self.notificationType = notificationType
        self.conversationID = conversationID
        self.emoji = emoji
        self.postID = postID
        self.lifetimeSeconds = lifetimeSeconds
        self.skipRelayWatchDevices = skipRelayWatchDevices
        self.leaseSeconds = leaseSeconds
        self.budget = budget
        self.background = background
    }

    package func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 16)
        bindings.append(sender)
        bindings.append(replayKey)
        bindings.append(replayExpires)
        bindings.append(recipients)
        bindings.append(eventID)
        bindings.append(notificationType.rawValue)
        bindings.append(conversationID)
        bindings.append(emoji)
        bindings.append(postID)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(skipRelayWatchDevices)
        bindings.append(leaseSeconds.map(Double.init))
        bindings.append(budget != nil)
        bindings.append(budget?.burst ?? 0)
        bindings.append(budget?.perSecond ?? 0)
        bindings.append(background)
        return bindings
    }

    package struct Row {
        package var fresh: Bool
        package var recipients: Int
        package var jobs: Int
        /// Devices whose budget was spent: dropped, never queued.
        package var overBudget: Int
        package var leased: ClaimedJob?
    }

    package func decodeRow(_ row: PostgresRow) throws -> Row {
        var columns = RowColumns(row)
        let (fresh, recipients, jobs, overBudget) = (
            try columns.next(Int.self), try columns.next(Int.self), try columns.next(Int.self), try columns.next(Int.self)
        )
        let notification = APNsNotification(
            type: notificationType, eventID: eventID, conversationID: conversationID, emoji: emoji, postID: postID,
            background: background)
        let leased = try ClaimedJob(leasedFrom: &columns, inBatch: true, reading: { _ in }, notification: { _, _ in notification })
        return Row(fresh: fresh == 1, recipients: recipients, jobs: jobs, overBudget: overBudget, leased: leased)
    }
}
