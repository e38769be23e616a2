import PostgresNIO

/// Keeps at most `MAX_DEVICES_PER_PUBKEY` devices per pubkey: past the cap, the least recently
/// registered devices go, and with them their queued jobs (the `devices_drop_jobs` trigger).
///
/// A key costs nothing to make, so without a cap one pubkey could register any number of tokens
/// and make every push to it fan out to all of them. Run after a registration group, only for the
/// pubkeys the group may have taken past the cap. Two groups for one pubkey at once may each see
/// the other's device missing and leave it one over until its next registration; never under.
struct EvictExcessDevicesStatement: PostgresPreparedStatement {
    static let sql = """
        DELETE FROM devices d USING (
            SELECT device_token FROM (
                SELECT device_token, row_number() OVER (PARTITION BY pubkey ORDER BY updated_at DESC, device_token DESC) AS rank
                FROM devices WHERE pubkey = ANY ($1::text[])
            ) ranked WHERE rank > $2
        ) excess
        WHERE d.device_token = excess.device_token
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
