import Foundation
import PostgresNIO

/// A group of `POST /v1/devices/register` requests as one prepared statement: one round trip and
/// one commit for the whole group, planned once per connection (planning this CTE costs more than
/// running it). The batch holds distinct device tokens and distinct replay keys
/// (`RegistrationQueue`).
///
/// Every part after `replay` applies only to the registrations whose replay key was new, so a
/// replayed request changes nothing. `previous` locks each token's row, so a concurrent move is
/// seen. A token that moves to another pubkey drops that pubkey's queued jobs for it, and that
/// pubkey's archive state when it has no device left; the archive check leaves out the moving
/// tokens because the statement's snapshot still shows them under their previous owners. Returns
/// one row per registration, in input order: its position, whether it was applied (false: a
/// replay) and how many devices its pubkey had before (`EvictExcessDevicesStatement` runs only
/// when that could pass the cap).
package struct RegisterDevicesStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest(
                $1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::text[], $9::text[],
                $10::text[], $11::text[], $12::text[])
                WITH ORDINALITY AS i(
                    pubkey, replay_key, expires_at, device_token, apns_environment, topic, relay_watch, relays, platform, push_type,
                    p256dh, auth_secret, position)
        ), replay AS (
            INSERT INTO auth_replays (pubkey, replay_key, expires_at)
            SELECT pubkey, replay_key, expires_at FROM input ORDER BY position
            ON CONFLICT DO NOTHING RETURNING pubkey, replay_key
        ), fresh AS (
            SELECT input.* FROM input JOIN replay USING (pubkey, replay_key)
        ), previous AS (
            SELECT d.device_token, d.pubkey AS previous_pubkey, fresh.pubkey AS new_pubkey
            FROM devices d JOIN fresh USING (device_token) ORDER BY d.device_token FOR UPDATE OF d
        ), upsert AS (
            -- A registration's relays travel as one space-separated text (no relay URL holds a space):
            -- unnest cannot take an array of arrays of different lengths.
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch, relays, platform, push_type, p256dh, auth_secret)
            -- Absent values travel as '' (an array of optionals cannot be bound).
            SELECT device_token, pubkey, NULLIF(apns_environment, ''), topic, relay_watch, string_to_array(relays, ' '), platform,
                push_type, NULLIF(p256dh, ''), NULLIF(auth_secret, '')
            FROM fresh ORDER BY device_token
            ON CONFLICT (device_token) DO UPDATE SET pubkey = EXCLUDED.pubkey, apns_environment = EXCLUDED.apns_environment,
                topic = EXCLUDED.topic, relay_watch = EXCLUDED.relay_watch, relays = EXCLUDED.relays, platform = EXCLUDED.platform,
                push_type = EXCLUDED.push_type, p256dh = EXCLUDED.p256dh, auth_secret = EXCLUDED.auth_secret, updated_at = now(),
                -- A token moving to another pubkey is registered anew: queued pushes to its previous owner stay behind.
                registered_at = CASE WHEN devices.pubkey = EXCLUDED.pubkey THEN devices.registered_at ELSE now() END
        ), moved AS (
            SELECT device_token, previous_pubkey FROM previous WHERE previous_pubkey <> new_pubkey
        ), moved_jobs AS (
            -- Queued jobs only (the partial index); a direct one in flight is dropped by the claim
            -- if it comes back (migration 0009).
            -- The array condition keeps it a probe of that index under any statistics.
            DELETE FROM push_jobs j USING moved
            WHERE j.device_token = ANY (ARRAY(SELECT device_token FROM moved)) AND j.device_token = moved.device_token AND NOT j.direct
        ), orphaned_archive AS (
            DELETE FROM archived_conversations a WHERE a.pubkey IN (SELECT previous_pubkey FROM moved)
              AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = a.pubkey AND d.device_token NOT IN (SELECT device_token FROM moved))
        )
        SELECT input.position::int, replay.pubkey IS NOT NULL,
               -- The pubkey's devices before this statement: whether the group may pass the cap.
               (SELECT count(*)::int FROM devices d WHERE d.pubkey = input.pubkey)
        FROM input LEFT JOIN replay USING (pubkey, replay_key) ORDER BY input.position
        """

    var registrations: [PendingRegistration]

    package init(registrations: [PendingRegistration]) {
        self.registrations = registrations
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 12)
        bindings.append(registrations.map(\.pubkey))
        bindings.append(registrations.map(\.replayKey))
        bindings.append(registrations.map(\.replayExpires))
        bindings.append(registrations.map(\.deviceToken))
        bindings.append(registrations.map { $0.environment ?? "" })
        bindings.append(registrations.map(\.topic))
        bindings.append(registrations.map(\.relayWatch))
        bindings.append(registrations.map { $0.relays.joined(separator: " ") })
        bindings.append(registrations.map(\.platform))
        bindings.append(registrations.map(\.pushType))
        bindings.append(registrations.map { $0.p256dh ?? "" })
        bindings.append(registrations.map { $0.authSecret ?? "" })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (position: Int, applied: Bool, devicesBefore: Int) {
        try row.decode((Int, Bool, Int).self)
    }
}
