import Crypto
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import Testing
import WebPush

/// Group commit of registrations: the batch rules as a value, the batcher's concurrency with a
/// recording writer, and the group statement against PostgreSQL.
@Suite struct RegistrationGroupTests {
    static func registration(_ pubkey: String, _ replayKey: String, token: String, environment: String = "sandbox") -> PendingRegistration {
        PendingRegistration(
            pubkey: pubkey, replayKey: replayKey, replayExpires: Date().addingTimeInterval(600), deviceToken: token,
            environment: environment, topic: GatewayHarness.topic, relayWatch: false)
    }

    static func pubkey(_ seed: UInt8) -> String { Hex.encode([UInt8](repeating: seed, count: 32)) }

    @Test func aBatchHoldsEachTokenAndReplayKeyOnceAndKeepsTheRestInOrder() {
        var queue = RegistrationQueue<Int>()
        let items = [
            Self.registration("A", "n1", token: "T1"),
            Self.registration("B", "n1", token: "T2"), // same key, other pubkey: a different replay key
            Self.registration("C", "n2", token: "T1"), // T1 again: waits
            Self.registration("A", "n1", token: "T3"), // A's n1 again: waits
            Self.registration("D", "n3", token: "T4"),
            Self.registration("E", "n4", token: "T5"),
        ]
        for (index, item) in items.enumerated() { queue.append(item, id: queue.reserveID(), waiter: index) }

        let first = queue.takeBatch(limit: 3)
        #expect(first.map(\.waiter) == [0, 1, 4])
        #expect(queue.entries.map(\.waiter) == [2, 3, 5])
        let second = queue.takeBatch(limit: 10)
        #expect(second.map(\.waiter) == [2, 3, 5])
        #expect(queue.isEmpty)
        #expect(queue.takeBatch(limit: 10).isEmpty)

        // A token a group being written holds waits for it, and so does the token's next
        // registration behind it; the rest goes.
        for (index, item) in items.prefix(3).enumerated() { queue.append(item, id: queue.reserveID(), waiter: index) }
        #expect(queue.takeBatch(limit: 10, busyTokens: ["T1"]).map(\.waiter) == [1])
        #expect(queue.entries.map(\.waiter) == [0, 2])
        #expect(queue.takeBatch(limit: 10).map(\.waiter) == [0])
        #expect(queue.takeBatch(limit: 10).map(\.waiter) == [2])

        let id = queue.reserveID()
        queue.append(items[0], id: id, waiter: 9)
        #expect(queue.remove(id: id)?.waiter == 9)
        #expect(queue.remove(id: id) == nil)
    }

    /// Records each group it is given; the first group waits until `hold` is released.
    final class RecordingWriter: Sendable {
        let groups = Mutex<[[String]]>([])
        let hold = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let holdFirst: Bool
        let failure: (any Error)?

        init(holdFirst: Bool, failure: (any Error)? = nil) {
            self.holdFirst = holdFirst
            self.failure = failure
        }

        func apply(_ group: [PendingRegistration]) async throws -> [RegistrationBatcher.Outcome] {
            let isFirst = groups.withLock { groups in
                groups.append(group.map(\.deviceToken))
                return groups.count == 1
            }
            if holdFirst && isFirst {
                await withCheckedContinuation { continuation in hold.withLock { $0 = continuation } }
            }
            if let failure { throw failure }
            return group.map { .success($0.replayKey != "replayed") }
        }

        func release() async throws {
            #expect(try await GatewayHarness.eventually { self.hold.withLock { $0 != nil } })
            hold.withLock { $0.take() }?.resume()
        }
    }

    @Test func whatArrivesDuringAWriteGoesInTheNextGroup() async throws {
        let writer = RecordingWriter(holdFirst: true)
        let batcher = RegistrationBatcher(maxGroupSize: 4, maxConcurrentGroups: 1) { try await writer.apply($0) }
        try await withThrowingTaskGroup(of: (String, Bool).self) { tasks in
            tasks.addTask { ("T0", try await batcher.register(Self.registration("A", "n0", token: "T0"))) }
            #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 1 })
            for index in 1...6 {
                let key = index == 3 ? "replayed" : "n\(index)"
                tasks.addTask { ("T\(index)", try await batcher.register(Self.registration("A", key, token: "T\(index)"))) }
            }
            #expect(try await GatewayHarness.eventually { batcher.queued == 6 })
            try await writer.release()
            var answers: [String: Bool] = [:]
            for try await (token, applied) in tasks { answers[token] = applied }
            #expect(answers == ["T0": true, "T1": true, "T2": true, "T3": false, "T4": true, "T5": true, "T6": true])
        }
        let groups = writer.groups.withLock { $0 }
        // The lone first registration went at once; the six that waited went as groups of at most four.
        #expect(groups.first == ["T0"])
        #expect(groups.dropFirst().map(\.count) == [4, 2])
        #expect(Set(groups.dropFirst().joined()) == Set((1...6).map { "T\($0)" }))
        #expect(batcher.queued == 0)
    }

    /// The only writer takes whatever waits; a second one only a full group, and a second writer
    /// with less than that waiting leaves it to the first.
    @Test func aSecondWriterTakesOnlyAFullGroup() {
        #expect(RegistrationBatcher.writes(groupsInFlight: 1, queued: 1, maxGroupSize: 64))
        #expect(!RegistrationBatcher.writes(groupsInFlight: 1, queued: 0, maxGroupSize: 64))
        #expect(!RegistrationBatcher.writes(groupsInFlight: 2, queued: 63, maxGroupSize: 64))
        #expect(RegistrationBatcher.writes(groupsInFlight: 2, queued: 64, maxGroupSize: 64))
        #expect(!RegistrationBatcher.writes(groupsInFlight: 2, queued: 0, maxGroupSize: 64))
    }

    /// With two groups allowed in flight, what gathers while one is written waits for it until a
    /// full group has gathered: a second group is written beside the first only then, whole.
    @Test func aSecondGroupIsWrittenBesideTheFirstOnlyWhenFull() async throws {
        let writer = RecordingWriter(holdFirst: true)
        let batcher = RegistrationBatcher(maxGroupSize: 4, maxConcurrentGroups: 2) { try await writer.apply($0) }
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask { try await batcher.register(Self.registration("A", "n0", token: "T0")) }
            #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 1 })
            // One at a time, so that they queue in this order.
            for index in 1...3 {
                tasks.addTask { try await batcher.register(Self.registration("A", "n\(index)", token: "T\(index)")) }
                #expect(try await GatewayHarness.eventually { batcher.queued == index })
            }
            // Time for a second writer, had one started, to take them.
            try await Task.sleep(for: .milliseconds(200))
            #expect(batcher.queued == 3, "three of four wait for the group in flight")
            #expect(writer.groups.withLock { $0.count } == 1)

            tasks.addTask { try await batcher.register(Self.registration("A", "n4", token: "T4")) }
            #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 2 })
            #expect(writer.groups.withLock { $0.last } == ["T1", "T2", "T3", "T4"], "written while the first group is held")
            try await writer.release()
            for try await applied in tasks { #expect(applied) }
        }
        #expect(writer.groups.withLock { $0 } == [["T0"], ["T1", "T2", "T3", "T4"]])
        #expect(batcher.queued == 0)
    }

    /// A second group written beside the first leaves out a device token the first holds: the
    /// token's next registration is written after the first group, as in arrival order.
    @Test func aSecondGroupLeavesATokenTheFirstHoldsForAfterIt() async throws {
        let writer = RecordingWriter(holdFirst: true)
        let batcher = RegistrationBatcher(maxGroupSize: 2, maxConcurrentGroups: 2) { try await writer.apply($0) }
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask { try await batcher.register(Self.registration("A", "n0", token: "T0")) }
            #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 1 })
            tasks.addTask { try await batcher.register(Self.registration("B", "n1", token: "T0")) }
            #expect(try await GatewayHarness.eventually { batcher.queued == 1 })
            tasks.addTask { try await batcher.register(Self.registration("B", "n2", token: "T5")) }
            #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 2 })
            #expect(writer.groups.withLock { $0.last } == ["T5"])
            #expect(batcher.queued == 1, "T0 again waits for the group that holds T0")
            try await writer.release()
            for try await applied in tasks { #expect(applied) }
        }
        #expect(writer.groups.withLock { $0 } == [["T0"], ["T5"], ["T0"]])
        #expect(batcher.queued == 0)
    }

    struct WriteFailed: Error {}

    @Test func aFailedGroupFailsItselfAndWhatWaitsBehindIt() async throws {
        let writer = RecordingWriter(holdFirst: true, failure: WriteFailed())
        let batcher = RegistrationBatcher(maxGroupSize: 2, maxConcurrentGroups: 1) { try await writer.apply($0) }
        await withTaskGroup(of: Bool.self) { tasks in
            tasks.addTask { (try? await batcher.register(Self.registration("A", "n0", token: "T0"))) != nil }
            #expect(try! await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 1 })
            for index in 1...5 {
                tasks.addTask { (try? await batcher.register(Self.registration("A", "n\(index)", token: "T\(index)"))) != nil }
            }
            #expect(try! await GatewayHarness.eventually { batcher.queued == 5 })
            try! await writer.release()
            var succeeded = 0
            for await ok in tasks where ok { succeeded += 1 }
            #expect(succeeded == 0)
        }
        // Only the failed group was written: the five behind it were answered without a write.
        #expect(writer.groups.withLock { $0 } == [["T0"]])
        #expect(batcher.queued == 0)
    }

    @Test func aCancelledRegistrationStillQueuedIsWithdrawn() async throws {
        let writer = RecordingWriter(holdFirst: true)
        let batcher = RegistrationBatcher(maxGroupSize: 8, maxConcurrentGroups: 1) { try await writer.apply($0) }
        let first = Task { try await batcher.register(Self.registration("A", "n0", token: "T0")) }
        #expect(try await GatewayHarness.eventually { writer.groups.withLock { $0.count } == 1 })
        let cancelled = Task { try await batcher.register(Self.registration("A", "n1", token: "T1")) }
        let kept = Task { try await batcher.register(Self.registration("A", "n2", token: "T2")) }
        #expect(try await GatewayHarness.eventually { batcher.queued == 2 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(batcher.queued == 1)
        try await writer.release()
        #expect(try await first.value)
        #expect(try await kept.value)
        #expect(writer.groups.withLock { $0 } == [["T0"], ["T2"]])
    }

    @Test func oneGroupStatementAppliesMovesReplaysAndOrphanedArchiveLikeSequentialRegistrations() async throws {
        try await TestDatabase.with { _, client in
            let logger = TestDatabase.logger
            let (a, b, c, e) = (Self.pubkey(0xA1), Self.pubkey(0xB2), Self.pubkey(0xC3), Self.pubkey(0xE5))
            let (t1, t2, t3, t5) = (GatewayHarness.token(1), GatewayHarness.token(2), GatewayHarness.token(3), GatewayHarness.token(5))
            // C owns T2 and T5, has archive state and a queued job for T2; B has used replay key "old".
            let setup = try await GatewayStore.applyRegistrations(
                [Self.registration(c, "c1", token: t2), Self.registration(c, "c2", token: t5), Self.registration(b, "old", token: t3)],
                maxDevicesPerPubkey: 10, database: Database(client), logger: logger)
            #expect(setup.map { try? $0.get() } == [true, true, true])
            try await client.query("INSERT INTO archived_conversations (pubkey, conversation_id) VALUES (\(c), 'conv')", logger: logger)
            try await client.query(
                """
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, expires_at)
                VALUES (gen_random_uuid(), \(t2), \(c), 'post', 'e1', 'conv', now() + interval '15 minutes')
                """, logger: logger)

            // One group: A registers T1; B takes T2 and E takes T5 from C, so C has no device left;
            // B reuses its replay key "old" with T1's neighbour T3, which must change nothing.
            let outcomes = try await GatewayStore.applyRegistrations(
                [
                    Self.registration(a, "a1", token: t1),
                    Self.registration(b, "b1", token: t2),
                    Self.registration(e, "e1", token: t5),
                    Self.registration(b, "old", token: GatewayHarness.token(9)),
                ], maxDevicesPerPubkey: 10, database: Database(client), logger: logger)
            #expect(outcomes.map { try? $0.get() } == [true, true, true, false])

            func owner(_ token: String) async throws -> String? {
                for try await pubkey in try await client.query("SELECT pubkey FROM devices WHERE device_token = \(token)", logger: logger)
                    .decode(String.self)
                {
                    return pubkey
                }
                return nil
            }
            #expect(try await owner(t1) == a)
            #expect(try await owner(t2) == b)
            #expect(try await owner(t5) == e)
            #expect(try await owner(GatewayHarness.token(9)) == nil)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 0)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM archived_conversations") == 0)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM auth_replays") == 6)
        }
    }

    /// Every platform's row, written by the group statement: the platform's own columns set, the
    /// others NULL, and a token that registers again as another platform takes the new shape. The
    /// table's check refuses a row whose columns do not fit its platform.
    @Test func eachPlatformIsStoredWithItsOwnColumns() async throws {
        try await TestDatabase.with { _, client in
            let logger = TestDatabase.logger
            let keys = try WebPushSubscriptionKeys(
                point: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), authSecret: [UInt8](repeating: 9, count: 16))
            let endpoint = try PushEndpoint("https://push.example/sub/1")
            let fcmToken = "fcm:" + String(repeating: "Z9y8", count: 30)
            let destinations: [PushDestination] = [
                .apns(token: GatewayHarness.token(1), environment: .production, kind: .voip),
                .fcm(token: fcmToken),
                .webPush(endpoint: endpoint, keys: keys),
                .unifiedPush(endpoint: try PushEndpoint("https://up.example/UP?t=1"), keys: nil),
            ]
            let registrations = destinations.enumerated().map { index, destination in
                PendingRegistration(
                    registering: destination, pubkey: Self.pubkey(0xA1), replayKey: "r\(index)",
                    replayExpires: Date().addingTimeInterval(600),
                    topic: GatewayHarness.topic, relayWatch: true, relays: [])
            }
            let outcomes = try await GatewayStore.applyRegistrations(
                registrations, maxDevicesPerPubkey: 10, database: Database(client), logger: logger)
            #expect(outcomes.map { try? $0.get() } == [true, true, true, true])
            var rows: [String: [String?]] = [:]
            for try await (token, platform, environment, pushType, p256dh, auth) in try await client.query(
                "SELECT device_token, platform, apns_environment, push_type, p256dh, auth_secret FROM devices", logger: logger
            ).decode((String, String, String?, String, String?, String?).self) {
                rows[token] = [platform, environment, pushType, p256dh, auth]
            }
            #expect(rows[GatewayHarness.token(1)] == ["apns", "production", "voip", nil, nil])
            #expect(rows[fcmToken] == ["fcm", nil, "alert", nil, nil])
            #expect(rows["https://push.example/sub/1"] == ["webpush", nil, "alert", keys.p256dh, keys.auth])
            #expect(rows["https://up.example/UP?t=1"] == ["unifiedpush", nil, "alert", nil, nil])

            // An endpoint registered again as another platform takes that platform's shape.
            let again = try await GatewayStore.applyRegistrations(
                [
                    PendingRegistration(
                        registering: .unifiedPush(endpoint: endpoint, keys: keys), pubkey: Self.pubkey(0xA1), replayKey: "r9",
                        replayExpires: Date().addingTimeInterval(600), topic: GatewayHarness.topic, relayWatch: false, relays: [])
                ], maxDevicesPerPubkey: 10, database: Database(client), logger: logger)
            #expect(again.map { try? $0.get() } == [true])
            #expect(
                try await TestDatabase.count(
                    client,
                    "SELECT count(*)::int FROM devices WHERE device_token = 'https://push.example/sub/1' AND platform = 'unifiedpush' AND p256dh IS NOT NULL"
                ) == 1)

            for bad in [
                "('t1', 'p', NULL, 'app', 'apns', 'alert', NULL, NULL)", // APNs without an environment
                "('t2', 'p', 'sandbox', 'app', 'fcm', 'alert', NULL, NULL)", // an environment off APNs
                "('t3', 'p', NULL, 'app', 'fcm', 'voip', NULL, NULL)", // VoIP off APNs
                "('t4', 'p', NULL, 'app', 'webpush', 'alert', NULL, NULL)", // Web Push without keys
                "('t5', 'p', NULL, 'app', 'unifiedpush', 'alert', 'k', NULL)", // half a key pair
                "('t6', 'p', NULL, 'app', 'fcm', 'alert', 'k', 'a')", // keys off Web Push
            ] {
                await #expect(throws: PSQLError.self, "\(bad)") {
                    try await client.query(
                        PostgresQuery(
                            unsafeSQL:
                                "INSERT INTO devices (device_token, pubkey, apns_environment, topic, platform, push_type, p256dh, auth_secret) VALUES \(bad)"
                        ), logger: logger)
                }
            }
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices") == 4)

            // Each device's job is claimed with the destination it registered. A row this build
            // cannot read (keys that do not parse) is left to expire: the claim round that meets
            // it still returns the jobs beside it.
            try await client.query(
                """
                INSERT INTO devices (device_token, pubkey, topic, platform, p256dh, auth_secret)
                VALUES ('https://up.example/garbled', \(Self.pubkey(0xA1)), 'app', 'unifiedpush', 'not-a-key', 'AAAA')
                """, logger: logger)
            try await client.query(
                """
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, expires_at)
                SELECT gen_random_uuid(), device_token, pubkey, 'new_post', 'e1', 'c1', now() + interval '15 minutes' FROM devices
                """, logger: logger)
            let claimed = try await DeliveryQueue(client: client, logger: logger).claim(limit: 10)
            let expected = [destinations[0], destinations[1], .unifiedPush(endpoint: endpoint, keys: keys), destinations[3]]
            #expect(
                claimed.map(\.destination).sorted { $0.address < $1.address } == expected.sorted { $0.address < $1.address })
        }
    }

    @Test func aGroupPostgreSQLRefusesIsWrittenOneByOneSoOnlyTheBadRegistrationFails() async throws {
        try await TestDatabase.with { _, client in
            let (a, b) = (Self.pubkey(0xA1), Self.pubkey(0xB2))
            // `apns_environment` has a CHECK constraint; the HTTP layer never lets "staging" through,
            // so this stands for any registration the database refuses.
            let outcomes = try await GatewayStore.applyRegistrations(
                [
                    Self.registration(a, "a1", token: GatewayHarness.token(1)),
                    Self.registration(b, "b1", token: GatewayHarness.token(2), environment: "staging"),
                    Self.registration(a, "a2", token: GatewayHarness.token(3)),
                ], maxDevicesPerPubkey: 10, database: Database(client), logger: TestDatabase.logger)
            #expect(try outcomes[0].get() == true)
            #expect(throws: APIError.self) { try outcomes[1].get() }
            #expect(try outcomes[2].get() == true)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices") == 2)
            // The refused registration left no replay key behind: its request may be sent again.
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM auth_replays WHERE pubkey = '\(b)'") == 0)

            // A group of one that PostgreSQL refuses is an outcome too, not a thrown failure (which
            // would fail every registration queued behind it).
            let alone = try await GatewayStore.applyRegistrations(
                [Self.registration(b, "b2", token: GatewayHarness.token(4), environment: "staging")], maxDevicesPerPubkey: 10,
                database: Database(client), logger: TestDatabase.logger)
            #expect(alone.count == 1)
            #expect(throws: APIError.self) { try alone[0].get() }
        }
    }

    @Test func concurrentRegistrationsOverHTTPEachGetTheirAnswer() async throws {
        try await GatewayHarness.run { gateway in
            let keys = (0..<24).map { _ in Keys.generate() }
            let shared = Keys.generate()
            let createdAt = UnixTime.now()
            let statuses = try await withThrowingTaskGroup(of: (String, Int).self) { tasks in
                for (index, key) in keys.enumerated() {
                    tasks.addTask {
                        let response = try await gateway.send(
                            key, .post, "/v1/devices/register",
                            json: GatewayHarness.registerBody(GatewayHarness.token(UInt8(index + 1))))
                        return ("distinct", response.status.code)
                    }
                }
                // The same signed request twice at once (one nonce): exactly one may apply.
                for _ in 0..<2 {
                    tasks.addTask {
                        let response = try await gateway.send(
                            shared, .post, "/v1/devices/register",
                            json: GatewayHarness.registerBody(GatewayHarness.token(0xEE)), nonce: "same-nonce", createdAt: createdAt)
                        return ("replay", response.status.code)
                    }
                }
                var statuses: [String: [Int]] = [:]
                for try await (kind, status) in tasks { statuses[kind, default: []].append(status) }
                return statuses
            }
            #expect(statuses["distinct"] == Array(repeating: 202, count: 24))
            #expect(statuses["replay"]?.sorted() == [202, 401])
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 25)
        }
    }

    /// The registration connections plan the group statement once, however the groups' sizes
    /// vary. Left to choose, PostgreSQL makes at least five plans for the values first, and with
    /// a populated `devices` went on planning each small group (see
    /// `GatewayApplication.registrationClient`).
    @Test func theRegistrationConnectionsPlanTheGroupStatementOnce() async throws {
        try await TestDatabase.with { url, shared in
            let registrations = GatewayApplication.registrationClient(url, logger: TestDatabase.logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await registrations.run() }
                var next = 0
                // Groups of 1 to 8 registrations on one connection, then how many generic and
                // custom plans that connection used for the statement.
                let dedicated: (generic: Int, custom: Int) = try await registrations.withConnection { connection in
                    for size in 1...8 {
                        let group = (0..<size).map { _ in
                            next += 1
                            return Self.registration(Self.pubkey(UInt8(next % 200 + 1)), "plan-\(next)", token: "plan-token-\(next)")
                        }
                        let rows = try await connection.execute(
                            RegisterDevicesStatement(registrations: group), logger: TestDatabase.logger)
                        var applied = 0
                        for try await row in rows where row.1 { applied += 1 }
                        #expect(applied == size)
                    }
                    let counts = try await connection.query(
                        "SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO auth_replays%'",
                        logger: TestDatabase.logger)
                    for try await (generic, custom) in counts.decode((Int, Int).self) { return (generic, custom) }
                    Issue.record("the statement was not prepared on this connection")
                    return (0, 0)
                }
                #expect(dedicated.custom == 0 && dedicated.generic == 8, "one generic plan, used by every group: \(dedicated)")
                #expect(try await TestDatabase.count(shared, "SELECT count(*)::int FROM devices") == 36)
                tasks.cancelAll()
            }
        }
    }
}
