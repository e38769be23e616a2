import Foundation
import PostgresNIO

/// `POST /v1/push` as one prepared statement: the replay key, dedupe rows per (event, type,
/// recipient) and one job per eligible device, in one round trip and one transaction. Everything
/// after `replay` depends on the key being new. The sender is never a recipient; devices whose
/// owner archived the conversation get no job.
///
/// With `leaseSeconds`, the jobs are inserted already claimed (leased, attempt 1) and returned with
/// their device, for this instance to send at once (`DirectDelivery`), as the relay watcher
/// does; their `next_attempt_at` is the lease's end, so the claim query's index scan stops before
/// them, and if this instance dies first they become due when the lease runs out.
///
/// Rows: `(replay fresh 1/0, recipients, jobs)` on every row, plus one leased job per row (a
/// single row without one when nothing was leased).
struct EnqueuePushStatement: PostgresPreparedStatement {
    static let sql = """
        WITH replay AS (
            INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
        ), recipients AS (
            SELECT DISTINCT r AS pubkey FROM unnest($4::text[]) AS r
            WHERE r <> $1 AND EXISTS (SELECT 1 FROM replay)
        ), fresh AS (
            INSERT INTO push_dedupe (event_id, notification_type, recipient)
            SELECT $5, $6, pubkey FROM recipients ORDER BY pubkey
            ON CONFLICT DO NOTHING RETURNING recipient
        ), targets AS (
            -- One index look-up per recipient. The generic plan (the one a prepared statement gets
            -- after five runs) guesses `fresh` at 200 rows and hashes a sequential scan of every
            -- device; OFFSET 0 keeps the planner from flattening the LATERAL subquery into that join.
            SELECT d.device_token, d.pubkey, d.apns_environment, d.topic, d.updated_at
            FROM fresh f CROSS JOIN LATERAL (SELECT * FROM devices WHERE pubkey = f.recipient OFFSET 0) d
            WHERE NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = d.pubkey AND a.conversation_id = $7)
              AND NOT (d.relay_watch AND $11)
        ), jobs AS (
            INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, emoji, post_id, expires_at,
                                   next_attempt_at, locked_until, attempts, direct)
            SELECT gen_random_uuid(), device_token, pubkey, $6, $5, $7, $8, $9, now() + make_interval(secs => $10),
                   -- $12, the lease, is NULL when the jobs are queued for the delivery loops.
                   coalesce(now() + make_interval(secs => $12), now()), now() + make_interval(secs => $12),
                   CASE WHEN $12 IS NULL THEN 0 ELSE 1 END, $12 IS NOT NULL
            FROM targets
            RETURNING id, apns_id, device_token, attempts, expires_at, locked_until
        ), counts AS (
            SELECT (SELECT count(*) FROM replay)::int AS fresh, (SELECT count(*) FROM recipients)::int AS recipients,
                   (SELECT count(*) FROM jobs)::int AS jobs
        )
        SELECT c.fresh, c.recipients, c.jobs, l.id, l.apns_id, l.device_token, l.pubkey, l.apns_environment, l.topic, l.updated_at,
               l.attempts, l.expires_at
        FROM counts c LEFT JOIN (
            SELECT j.id, j.apns_id, j.device_token, t.pubkey, t.apns_environment, t.topic, t.updated_at, j.attempts, j.expires_at
            FROM jobs j JOIN targets t ON t.device_token = j.device_token
            WHERE j.locked_until IS NOT NULL
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

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 12)
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
        return bindings
    }

    struct Row {
        var fresh: Bool
        var recipients: Int
        var jobs: Int
        var leased: ClaimedJob?
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (fresh, recipients, jobs, id, apnsID, token, pubkey, environment, topic, updatedAt, attempts, expiresAt) =
            try row.decode((Int, Int, Int, Int64?, UUID?, String?, String?, String?, String?, Date?, Int?, Date?).self)
        let leased = ClaimedJob(
            leasedID: id, apnsID: apnsID, deviceToken: token, pubkey: pubkey, environment: environment, topic: topic, deviceUpdatedAt: updatedAt,
            attempts: attempts, expiresAt: expiresAt) { _ in
                APNsNotification(type: notificationType, eventID: eventID, conversationID: conversationID, emoji: emoji, postID: postID)
            }
        return Row(fresh: fresh == 1, recipients: recipients, jobs: jobs, leased: leased)
    }
}
