import Foundation
import PostgresNIO

/// `POST /v1/devices/register` as one prepared statement: one round trip, parsed and planned once
/// per connection (planning this CTE costs more than running it). Every part after `replay` is
/// conditional on the replay key being new, so a replayed request changes nothing. `previous`
/// locks the token's row, so a concurrent move is seen; the archive check excludes the moving
/// token because the statement's snapshot still shows it under its previous owner. A token that
/// moves to another pubkey drops that pubkey's queued jobs for it, and that pubkey's archive state
/// when it has no device left. Returns `[1]` when applied, `[0]` for a replay.
struct RegisterDeviceStatement: PostgresPreparedStatement {
    static let sql = """
        WITH replay AS (
            INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
        ), previous AS (
            SELECT pubkey FROM devices WHERE device_token = $4 AND EXISTS (SELECT 1 FROM replay) FOR UPDATE
        ), upsert AS (
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
            SELECT $4, $1, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM replay)
            ON CONFLICT (device_token) DO UPDATE SET pubkey = EXCLUDED.pubkey, apns_environment = EXCLUDED.apns_environment,
                topic = EXCLUDED.topic, relay_watch = EXCLUDED.relay_watch, updated_at = now()
        ), moved_jobs AS (
            DELETE FROM push_jobs WHERE device_token = $4 AND EXISTS (SELECT 1 FROM previous WHERE pubkey <> $1)
        ), orphaned_archive AS (
            DELETE FROM archived_conversations a WHERE a.pubkey IN (SELECT pubkey FROM previous WHERE pubkey <> $1)
              AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = a.pubkey AND d.device_token <> $4)
        )
        SELECT (SELECT count(*) FROM replay)::int
        """

    var pubkey: String
    var replayKey: String
    var replayExpires: Date
    var deviceToken: String
    var environment: String
    var topic: String
    var relayWatch: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(pubkey)
        bindings.append(replayKey)
        bindings.append(replayExpires)
        bindings.append(deviceToken)
        bindings.append(environment)
        bindings.append(topic)
        bindings.append(relayWatch)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> [Int] {
        [try row.decode(Int.self)]
    }
}
