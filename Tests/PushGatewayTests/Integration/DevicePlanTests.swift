import Foundation
import PostgresNIO
import PushGateway
import Testing

/// The device cap's eviction reads `devices` by key whatever the planner believes. Any key can set
/// it off (one registration past the cap), so a plan that scans every device per eviction is
/// PostgreSQL CPU an attacker controls. On statistics that overestimate the devices per pubkey
/// (the table analyzed while a few pubkeys held most of it), the planner prefers a hash join to
/// per-row look-ups; for the eviction's plain join that meant a sequential scan of `devices`, seen
/// at 50–60 ms an eviction with 100,000 devices in the gateway benchmark.
@Suite(.serialized) struct DevicePlanTests {
    /// Reads of `devices` in an EXPLAIN (FORMAT JSON) plan that take no key: sequential scans and
    /// index scans without a condition. Index and bitmap scans with a condition are keyed.
    static func unkeyedDeviceReads(_ value: Any) -> [String] {
        if let list = value as? [Any] { return list.flatMap(unkeyedDeviceReads) }
        guard let node = value as? [String: Any] else { return [] }
        if let inner = node["Plan"] { return unkeyedDeviceReads(inner) }
        var found: [String] = []
        let type = node["Node Type"] as? String ?? "?"
        let onDevices = node["Relation Name"] as? String == "devices" || (node["Index Name"] as? String)?.hasPrefix("devices_") == true
        if onDevices {
            switch type {
            case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
                if node["Index Cond"] == nil { found.append("\(type) using \(node["Index Name"] ?? "?") without a condition") }
            case "Bitmap Heap Scan", "ModifyTable":
                break
            default:
                found.append("\(type) on devices")
            }
        }
        for child in node["Plans"] as? [Any] ?? [] { found += unkeyedDeviceReads(child) }
        return found
    }

    /// The eviction's plan for `arguments`, in a generic or custom plan, with or without nested
    /// loops (off: what the planner picks when it expects many rows per pubkey).
    static func evictionPlan(_ client: PostgresClient, sql: String, arguments: String, generic: Bool, nestedLoops: Bool) async throws -> Any
    {
        try await client.withConnection { connection in
            let settings = [
                "SET plan_cache_mode = \(generic ? "force_generic_plan" : "force_custom_plan")",
                "SET enable_nestloop = \(nestedLoops ? "on" : "off")",
            ]
            for setting in settings { try await connection.query(PostgresQuery(unsafeSQL: setting), logger: TestDatabase.logger) }
            try await connection.query(
                PostgresQuery(unsafeSQL: "PREPARE evict_planned(text[], bigint) AS \(sql)"), logger: TestDatabase.logger)
            func reset() async throws {
                try await connection.query("DEALLOCATE evict_planned", logger: TestDatabase.logger)
                try await connection.query("RESET plan_cache_mode", logger: TestDatabase.logger)
                try await connection.query("RESET enable_nestloop", logger: TestDatabase.logger)
            }
            do {
                var json = ByteBuffer()
                for try await text in try await connection.query(
                    PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON) EXECUTE evict_planned(\(arguments))"), logger: TestDatabase.logger
                ).decode(ByteBuffer.self) {
                    json = text
                }
                try await reset()
                return try JSONSerialization.jsonObject(with: Data(json.readableBytesView))
            } catch {
                try? await reset()
                throw error
            }
        }
    }

    @Test func theEvictionReadsDevicesByKeyWhateverJoinThePlannerPicks() async throws {
        try await TestDatabase.with { _, client in
            // Statistics taken while 200 pubkeys held 10 devices each, then a table fifty times
            // that size with one device per pubkey: the planner expects hundreds of devices per
            // pubkey.
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic)
                SELECT 'crowded' || i, 'crowded' || (i % 200), 'sandbox', 'app.test' FROM generate_series(1, 2000) AS i
                """, logger: TestDatabase.logger)
            try await client.query("ALTER TABLE devices SET (autovacuum_enabled = off)", logger: TestDatabase.logger)
            try await client.query("ANALYZE devices", logger: TestDatabase.logger)
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, apns_environment, topic)
                SELECT 'single' || i, 'single' || i, 'sandbox', 'app.test' FROM generate_series(1, 100000) AS i
                """, logger: TestDatabase.logger)
            let pubkeys = "'{\((0..<16).map { "crowded\($0)" }.joined(separator: ","))}'"
            for generic in [true, false] {
                for nestedLoops in [true, false] {
                    let plan = try await Self.evictionPlan(
                        client, sql: EvictExcessDevicesStatement.sql, arguments: "\(pubkeys), 5", generic: generic, nestedLoops: nestedLoops
                    )
                    let unkeyed = Self.unkeyedDeviceReads(plan)
                    #expect(unkeyed.isEmpty, "generic \(generic), nested loops \(nestedLoops): \(unkeyed)")
                }
            }
            // And it evicts what it should: each of the 16 pubkeys keeps its 5 newest devices.
            let evicted = try await client.execute(
                EvictExcessDevicesStatement(pubkeys: (0..<16).map { "crowded\($0)" }, maxDevicesPerPubkey: 5), logger: TestDatabase.logger)
            var count = 0
            for try await _ in evicted { count += 1 }
            #expect(count == 16 * 5)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices WHERE pubkey = 'crowded3'") == 5)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices WHERE pubkey = 'crowded199'") == 10)
        }
    }
}
