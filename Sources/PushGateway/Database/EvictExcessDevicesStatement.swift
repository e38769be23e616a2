import PostgresNIO

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
struct EvictExcessDevicesStatement: PostgresPreparedStatement {
    static let sql = """
        DELETE FROM devices d USING (
            SELECT device_token, pubkey, updated_at FROM (
                SELECT device_token, pubkey, updated_at,
                       row_number() OVER (PARTITION BY pubkey ORDER BY updated_at DESC, device_token DESC) AS rank
                FROM devices WHERE pubkey = ANY ($1::text[])
            ) ranked WHERE rank > $2
        ) excess
        -- A row registered again or moved to another pubkey since the ranking is left alone: the
        -- re-checked condition no longer holds for its new version.
        WHERE d.device_token = excess.device_token AND d.pubkey = excess.pubkey AND d.updated_at = excess.updated_at
        RETURNING d.pubkey
        """

    var pubkeys: [String]
    var maxDevicesPerPubkey: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pubkeys)
        bindings.append(maxDevicesPerPubkey)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> String {
        try row.decode(String.self)
    }
}
