package import PostgresNIO

/// Keeps at most `MAX_DEVICES_PER_PUBKEY` devices per pubkey: past the cap, the least recently
/// registered devices go, and with them their queued jobs (the `devices_drop_jobs` trigger).
///
/// A key costs nothing to make, so without a cap one pubkey could register any number of tokens
/// and make every push to it fan out to all of them. Run after a registration group, only for the
/// pubkeys the group may have taken past the cap, after the group committed and outside its
/// retries (a failed eviction is logged and caught up by the pubkey's next registration). Two
/// groups for one pubkey at once may each miss the other's device and leave it over the cap until
/// its next registration. Devices registered in one statement share its time, so a group that
/// registers more than the cap for one pubkey keeps the ones with the highest tokens.
///
/// `d.device_token = ANY (…)` repeats the join's condition so that the evicted rows are always
/// read through the primary key. Planned on statistics that put many devices on each pubkey (a
/// few pubkeys held most devices when the table was last analyzed, or it was analyzed while
/// nearly empty), the plain join was a hash join over a sequential scan of every device: 50–60 ms
/// of PostgreSQL CPU per eviction at 100,000 devices, growing with the table, for a statement
/// any key can set off by registering one device past the cap (`DevicePlanTests`).
package struct EvictExcessDevicesStatement: PostgresPreparedStatement {
    package static let sql = """
        WITH excess AS (
            SELECT device_token, pubkey, updated_at FROM (
                SELECT device_token, pubkey, updated_at,
                       row_number() OVER (PARTITION BY pubkey ORDER BY updated_at DESC, device_token DESC) AS rank
                FROM devices WHERE pubkey = ANY ($1::text[])
            ) ranked WHERE rank > $2
        )
        DELETE FROM devices d USING excess
        -- A row registered again or moved to another pubkey since the ranking is left alone: the
        -- re-checked condition no longer holds for its new version.
        WHERE d.device_token = ANY (ARRAY(SELECT device_token FROM excess)) AND d.device_token = excess.device_token
          AND d.pubkey = excess.pubkey AND d.updated_at = excess.updated_at
        RETURNING d.pubkey
        """

    var pubkeys: [String]
    var maxDevicesPerPubkey: Int

    package init(pubkeys: [String], maxDevicesPerPubkey: Int) {
        self.pubkeys = pubkeys
        self.maxDevicesPerPubkey = maxDevicesPerPubkey
    }

    package func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pubkeys)
        bindings.append(maxDevicesPerPubkey)
        return bindings
    }

    package func decodeRow(_ row: PostgresRow) throws -> String {
        try row.decode(String.self)
    }
}
