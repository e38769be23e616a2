import PostgresNIO

/// A batch of gift wraps for the inbox relay, as one prepared statement (one round trip, one
/// commit, planned once per connection): each wrap is stored for its recipient if the recipient
/// has a registered device, and fewer than `maxPerRecipient` wraps and `maxBytesPerRecipient`
/// bytes of them stored before the statement, once per id, and every stored one is announced on `channel` (NOTIFY, sent at the commit). A row
/// per input wrap comes back, in input order: (registered, room, inserted now, stored before).
struct StoreInboxWrapsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS i(id, recipient, created_at, event, position)
        ), recipient AS (
            SELECT r.recipient,
                   EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = r.recipient) AS registered,
                   (SELECT count(*) FROM (SELECT 1 FROM inbox_wraps w WHERE w.recipient = r.recipient LIMIT $5) AS kept) < $5
                   AND (SELECT coalesce(sum(octet_length(w.event)), 0) FROM inbox_wraps w WHERE w.recipient = r.recipient) < $7 AS room
            FROM (SELECT DISTINCT recipient FROM input) AS r
        ), inserted AS (
            INSERT INTO inbox_wraps (id, recipient, created_at, event)
            SELECT DISTINCT ON (i.id) i.id, i.recipient, i.created_at, i.event
            FROM input i JOIN recipient r ON r.recipient = i.recipient WHERE r.registered AND r.room
            ORDER BY i.id
            ON CONFLICT (id) DO NOTHING RETURNING id, recipient
        ), notified AS (SELECT pg_notify($6, recipient || ' ' || id) FROM inserted)
        SELECT r.registered, r.room, EXISTS (SELECT 1 FROM inserted n WHERE n.id = i.id),
               EXISTS (SELECT 1 FROM inbox_wraps w WHERE w.id = i.id), (SELECT count(*)::int FROM notified)
        FROM input i JOIN recipient r ON r.recipient = i.recipient
        ORDER BY i.position
        """

    var ids: [String]
    var recipients: [String]
    var createdAt: [Int64]
    var events: [String]
    var maxPerRecipient: Int
    var channel: String
    var maxBytesPerRecipient: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(ids)
        bindings.append(recipients)
        bindings.append(createdAt)
        bindings.append(events)
        bindings.append(maxPerRecipient)
        bindings.append(channel)
        bindings.append(maxBytesPerRecipient)
        return bindings
    }

    /// One input wrap: whether its recipient is registered and had room, whether it was inserted
    /// now, and whether it was stored before (the statement does not see its own inserts).
    struct Row {
        var registered: Bool
        var room: Bool
        var inserted: Bool
        var known: Bool
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (registered, room, inserted, known, _) = try row.decode((Bool, Bool, Bool, Bool, Int).self)
        return Row(registered: registered, room: room, inserted: inserted, known: known)
    }
}
