import Foundation
import PostgresNIO

/// `POST /v1/push` as one prepared statement: the replay key, dedupe rows per (event, type,
/// recipient) and one job per eligible device, in one round trip and one transaction. Everything
/// after `replay` depends on the key being new. The sender is never a recipient; devices whose
/// owner archived the conversation get no job. Returns `[replay fresh (1/0), recipients, jobs]`.
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
        ), jobs AS (
            INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, emoji, post_id, expires_at)
            SELECT gen_random_uuid(), d.device_token, d.pubkey, $6, $5, $7, $8, $9, now() + make_interval(secs => $10)
            -- LATERAL: one index look-up per recipient. As a plain join the generic plan (the one
            -- a prepared statement gets after five runs) hashes a sequential scan of every device.
            FROM fresh f CROSS JOIN LATERAL (SELECT device_token, pubkey, relay_watch FROM devices WHERE pubkey = f.recipient) d
            WHERE NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = d.pubkey AND a.conversation_id = $7)
              AND NOT (d.relay_watch AND $11)
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM replay)::int, (SELECT count(*) FROM recipients)::int, (SELECT count(*) FROM jobs)::int
        """

    var sender: String
    var replayKey: String
    var replayExpires: Date
    var recipients: [String]
    var eventID: String
    var notificationType: String
    var conversationID: String
    var emoji: String?
    var postID: String?
    var lifetimeSeconds: Int
    var skipRelayWatchDevices: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(sender)
        bindings.append(replayKey)
        bindings.append(replayExpires)
        bindings.append(recipients)
        bindings.append(eventID)
        bindings.append(notificationType)
        bindings.append(conversationID)
        bindings.append(emoji)
        bindings.append(postID)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(skipRelayWatchDevices)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> [Int] {
        let (fresh, recipients, jobs) = try row.decode((Int, Int, Int).self)
        return [fresh, recipients, jobs]
    }
}
