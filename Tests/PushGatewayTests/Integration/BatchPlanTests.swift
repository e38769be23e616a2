import Foundation
import NostrProtocol
import PostgresNIO
import PushGateway
import Testing

/// A statement that writes a batch (of wraps, of registrations) costs in proportion to the
/// batch. Each is planned once per connection, for an input the generic plan guesses at 10 rows;
/// a join between two of its intermediate results (CTEs, which have no index) planned on that
/// guess is a nested loop that reads the inner result once for each row of the outer one: the
/// square of the batch. At the watcher's largest batch (256 wraps) one such join made the record
/// statement take 14.8–15.0 ms instead of 12.3–12.5.
///
/// Each test runs its statement under the generic plan on a batch (200 wraps or a push to 200
/// recipients, each recipient registered, or a full group of registrations) and reads the
/// executed plan: every CTE is read at most once. Against the join each replaced, the wrap tests
/// find `paced` (and the inbox's `stored`) read 200 times.
@Suite(.serialized) struct BatchPlanTests {
    static let batchSize = 200
    static let seenBefore = 20_000

    static func hex(_ seed: Int, _ tag: UInt8) -> String {
        Hex.encode([tag] + [UInt8](repeating: 0, count: 27) + withUnsafeBytes(of: UInt32(seed).bigEndian, Array.init))
    }

    static func recipients() -> [String] { (0..<batchSize).map { hex($0, 0xaa) } }

    /// One device per recipient, watching relays, and the planner's statistics taken.
    static func registerRecipients(_ client: PostgresClient) async throws {
        let recipients = recipients()
        let tokens = (0..<batchSize).map { hex($0, 0xd0) }
        try await client.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
            SELECT t, p, 'sandbox', 'app.test', true FROM unnest(\(tokens)::text[], \(recipients)::text[]) AS u(t, p)
            """, logger: TestDatabase.logger)
        // Wraps seen before, as a running gateway has: the planner then expects few of a batch's
        // wraps to be new, and the steps after the claim to see a row or two.
        try await client.query(
            "INSERT INTO seen_wraps (wrap_id) SELECT md5(i::text) || md5((i + 1)::text) FROM generate_series(1, \(seenBefore)) AS i",
            logger: TestDatabase.logger)
        try await client.query("ANALYZE", logger: TestDatabase.logger)
    }

    static func literal(_ values: [String]) -> String { QueuePlanTests.QueueStatement.literal(values) }

    /// How many times each CTE was read, at most, by any one node of the executed generic plan
    /// of `sql` (the plan a prepared statement settles on).
    static func cteReads(_ client: PostgresClient, sql: String, types: String, arguments: String) async throws -> [String: Int] {
        let plan = try await QueuePlanTests.plan(client, sql, types: types, arguments: arguments, mode: .generic, executed: true)
        var reads: [String: Int] = [:]
        func visit(_ value: Any) {
            if let list = value as? [Any] { list.forEach(visit) }
            guard let node = value as? [String: Any] else { return }
            if let inner = node["Plan"] { visit(inner) }
            if node["Node Type"] as? String == "CTE Scan", let name = node["CTE Name"] as? String, let loops = node["Actual Loops"] as? Int
            {
                reads[name] = max(reads[name] ?? 0, loops)
            }
            (node["Plans"] as? [Any] ?? []).forEach(visit)
        }
        visit(plan)
        return reads
    }

    /// Runs `sql` on a fresh database whose recipients are registered: the steps named in
    /// `reaching` ran (the batch got that far), and no CTE was read more than once.
    static func expectEachCTEReadOnce(sql: String, types: String, arguments: String, reaching steps: [String]) async throws {
        try await TestDatabase.with { _, client in
            try await registerRecipients(client)
            let reads = try await cteReads(client, sql: sql, types: types, arguments: arguments)
            #expect(steps.allSatisfy { reads[$0] != nil }, "\(reads)")
            #expect(reads.values.allSatisfy { $0 <= 1 }, "CTEs read more than once: \(reads.filter { $0.value > 1 })")
        }
    }

    static func repeated(_ value: String, _ count: Int = batchSize) -> String { literal([String](repeating: value, count: count)) }

    /// The watcher's own arguments: live real-time sightings, a 60 s window, leased when due.
    @Test func recordingABatchOfWrapsReadsEachIntermediateResultOnce() async throws {
        let wraps = (0..<Self.batchSize).map { Self.hex($0, 0xee) }
        try await Self.expectEachCTEReadOnce(
            sql: RecordWrapsStatement.sql,
            types: "text[], text[], text[], bool[], float8, float8, bool, float8, bool[], float8, bool, float8, float8",
            arguments: "\(Self.literal(wraps)), \(Self.literal(Self.recipients())), \(Self.repeated("ws://relay")), "
                + "\(Self.repeated("true")), 60, 86400, true, 30, \(Self.repeated("true")), 300, true, 10, 0.1667",
            reaching: ["pending", "paced"])
    }

    @Test func storingABatchOfInboxWrapsReadsEachIntermediateResultOnce() async throws {
        let wraps = (0..<Self.batchSize).map { Self.hex($0, 0xef) }
        try await Self.expectEachCTEReadOnce(
            sql: StoreInboxWrapsStatement.sql,
            types: "text[], text[], bigint[], text[], bigint, text, bigint, bool, text, float8, float8, float8, bool, float8, bool, "
                + "float8, float8, bigint",
            arguments: "\(Self.literal(wraps)), \(Self.literal(Self.recipients())), \(Self.repeated("1")), \(Self.repeated("x")), "
                + "2000, 'linkstr_inbox', 8388608, true, 'ws://inbox', 300, 60, 86400, true, 30, true, 10, 0.1667, 60",
            reaching: ["stored", "paced"])
    }

    /// A full group of registrations, each moving a token from another pubkey (so that every
    /// step, the moved tokens' jobs and archive included, has rows).
    @Test func registeringAGroupReadsEachIntermediateResultOnce() async throws {
        let group = RegistrationBatcher.defaultMaxGroupSize
        let tokens = (0..<group).map { Self.hex($0, 0xd0) }
        let newOwners = (0..<group).map { Self.hex($0, 0xbb) }
        let replayKeys = (0..<group).map { "replay\($0)" }
        func repeated(_ value: String) -> String { Self.repeated(value, group) }
        try await Self.expectEachCTEReadOnce(
            sql: RegisterDevicesStatement.sql,
            types: "text[], text[], timestamptz[], text[], text[], text[], bool[], text[], text[], text[], text[], text[]",
            arguments: "\(Self.literal(newOwners)), \(Self.literal(replayKeys)), \(repeated("2030-01-01T00:00:00Z")), "
                + "\(Self.literal(tokens)), \(repeated("sandbox")), \(repeated("app.test")), \(repeated("true")), \(repeated("\"\"")), "
                + "\(repeated("apns")), \(repeated("alert")), \(repeated("\"\"")), \(repeated("\"\""))",
            reaching: ["fresh", "moved"])
    }

    /// A typed push to `batchSize` recipients, relay-watch devices included.
    @Test func queueingAPushReadsEachIntermediateResultOnce() async throws {
        try await Self.expectEachCTEReadOnce(
            sql: EnqueuePushStatement.sql,
            types: "text, text, timestamptz, text[], text, text, text, text, text, float8, bool, float8, bool, float8, float8, bool",
            arguments: "'sender', 'replay', '2030-01-01T00:00:00Z', \(Self.literal(Self.recipients())), 'event', 'new_post', 'c1', "
                + "NULL, NULL, 900, false, 30, true, 10, 0.1667, false",
            reaching: ["targets", "members"])
    }
}
