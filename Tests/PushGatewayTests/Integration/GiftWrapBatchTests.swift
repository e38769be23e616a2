import Foundation
import GatewayWire
import NostrProtocol
import PostgresNIO
import PushGateway
import Testing

/// Gift-wrap pushes sent at once (the relay watcher's and the inbox relay's, leased to the
/// instance that recorded them) are one batch row per statement (`push_batches`, migration 0021),
/// each member with its own wrap, relay and count: sent from the statement's answer, claimed again
/// with the same payloads and apns-ids when the lease lapses, retried as jobs of their own that
/// keep them, and erased with their owner's account. Against a real PostgreSQL.
@Suite(.serialized) struct GiftWrapBatchTests {
    static let wrapA = String(repeating: "a7", count: 32), wrapB = String(repeating: "b8", count: 32)

    /// Bob (the store's user) and Carol, both watched, each sighted with a wrap of their own on a
    /// relay of its own, leased for a minute.
    static func recordTwo(
        _ body: @Sendable (GatewayHarness, _ bob: Keys, _ carol: Keys, WatchStore.RecordResult) async throws -> Void
    ) async throws {
        try await RelayWatchTests.withWatchingStore(token: 0xC1) { gateway, bob, store in
            let carol = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xC2))
            let result = try await store.record(
                [
                    WrapSighting(wrapID: wrapA, recipient: bob.publicKey.hex, relay: "wss://a.example", phase: .realtime),
                    WrapSighting(wrapID: wrapB, recipient: carol.publicKey.hex, relay: "wss://b.example", phase: .realtime),
                ], leaseSeconds: 60)
            try await body(gateway, bob, carol, result)
        }
    }

    /// What each member should carry, by its recipient.
    static func expectedNotifications(bob: Keys, carol: Keys) -> [String: APNsNotification] {
        [
            bob.publicKey.hex: .giftWrap(wrapID: wrapA, relay: "wss://a.example", count: 1, recipient: bob.publicKey.hex),
            carol.publicKey.hex: .giftWrap(wrapID: wrapB, relay: "wss://b.example", count: 1, recipient: carol.publicKey.hex),
        ]
    }

    @Test func pushesSentAtOnceAreOneBatchAndComeBackWholeWhenTheLeaseLapses() async throws {
        try await Self.recordTwo { gateway, bob, carol, result in
            #expect(result.claimed == 2 && result.jobs == 2)
            let expected = Self.expectedNotifications(bob: bob, carol: carol)
            #expect(result.leased.count == 2 && result.leased.allSatisfy { $0.inBatch && $0.attempts == 1 })
            #expect(Set(result.leased.map(\.id)).count == 1, "one batch")
            for job in result.leased { #expect(job.notification == expected[job.pubkey], "\(job.pubkey)") }
            #expect(Set(result.leased.map(\.apnsID)).count == 2, "an apns-id per device")

            #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 0, "no job row per push")
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_batches WHERE size = 2 AND attempts = 1 AND notification_type = 'gift_wrap'
                      AND next_attempt_at BETWEEN now() + interval '59 seconds' AND now() + interval '61 seconds'
                    """) == 1, "one row, leased for a minute")
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_queue WHERE source = 'batch' AND locked_until IS NOT NULL AND wrap_count = 1
                      AND ((pubkey = '\(bob.publicKey.hex)' AND event_id = '\(Self.wrapA)' AND relay = 'wss://a.example')
                        OR (pubkey = '\(carol.publicKey.hex)' AND event_id = '\(Self.wrapB)' AND relay = 'wss://b.example'))
                    """) == 2, "the queue's view shows each member's own wrap and relay")
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM watch_coalesce WHERE next_at <= now() + interval '1 second'") == 2,
                "each device's window opens now")

            let queue = DeliveryQueue(client: gateway.database, logger: TestDatabase.logger)
            #expect(try await queue.claim(limit: 10).isEmpty, "in flight: not due")
            try await DeliveryTests.expireLeases(gateway.database)
            let again = try await queue.claim(limit: 10)
            #expect(again.count == 2 && again.allSatisfy { $0.inBatch && $0.attempts == 2 })
            #expect(Set(again.map(\.apnsID)) == Set(result.leased.map(\.apnsID)), "the same apns-ids")
            for job in again { #expect(job.notification == expected[job.pubkey], "\(job.pubkey) keeps its wrap, relay and count") }

            // The lapsed sender finishing late touches nothing; the newer claim's finish ends it.
            try await queue.finish(result.leased)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 1)
            try await queue.finish(again)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
        }
    }

    @Test func aRetriedMemberBecomesAJobThatKeepsItsWrapRelayCountAndAPNsID() async throws {
        try await Self.recordTwo { gateway, bob, carol, result in
            let carols = try #require(result.leased.first { $0.pubkey == carol.publicKey.hex })
            let bobs = try #require(result.leased.first { $0.pubkey == bob.publicKey.hex })
            let queue = DeliveryQueue(client: gateway.database, logger: TestDatabase.logger)
            try await queue.finish([bobs], retrying: [MemberRetry(member: carols, delaySeconds: 0, reason: "InternalServerError")])
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 0, "the batch is finished")
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_jobs WHERE pubkey = '\(carol.publicKey.hex)' AND notification_type = 'gift_wrap'
                      AND event_id = '\(Self.wrapB)' AND relay = 'wss://b.example' AND wrap_count = 1 AND attempts = 1
                      AND apns_id = '\(carols.apnsID.uuidString)' AND last_error = 'InternalServerError' AND locked_until IS NULL
                    """) == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 1, "only the retry")
            let retried = try await queue.claim(limit: 10)
            #expect(retried.count == 1)
            #expect(retried.first?.notification == Self.expectedNotifications(bob: bob, carol: carol)[carol.publicKey.hex])
            #expect(retried.first?.apnsID == carols.apnsID && retried.first?.attempts == 2 && retried.first?.inBatch == false)
        }
    }

    @Test func erasingAnAccountTakesItsMemberOutWithItsWrap() async throws {
        try await Self.recordTwo { gateway, bob, carol, _ in
            try await Database(gateway.database).withConnection { connection in
                try await BatchMembersRemoval(pubkey: bob.publicKey.hex, conversationIDs: nil).run(
                    on: connection, logger: TestDatabase.logger)
            }
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_batches WHERE size = 1 AND pubkeys = ARRAY['\(carol.publicKey.hex)']
                      AND event_ids = ARRAY['\(Self.wrapB)'] AND relays = ARRAY['wss://b.example'] AND wrap_counts = ARRAY[1]
                    """) == 1, "Carol's member keeps its own wrap, relay and count")
            try await DeliveryTests.expireLeases(gateway.database)
            let queue = DeliveryQueue(client: gateway.database, logger: TestDatabase.logger)
            let left = try await queue.claim(limit: 10)
            #expect(left.map(\.notification) == [Self.expectedNotifications(bob: bob, carol: carol)[carol.publicKey.hex]!])
            // Erasing the last member empties the batch, which then goes.
            try await Database(gateway.database).withConnection { connection in
                try await BatchMembersRemoval(pubkey: carol.publicKey.hex, conversationIDs: nil).run(
                    on: connection, logger: TestDatabase.logger)
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 0)
        }
    }

    /// A batch's arrays must stay aligned: the table refuses a gift-wrap batch whose arrays are
    /// shorter or longer than its devices.
    @Test func theTableRefusesMisalignedArrays() async throws {
        try await TestDatabase.with { _, client in
            for (events, relays, counts) in [
                ("ARRAY['e1']", "ARRAY['r1', 'r2']", "ARRAY[1, 1]"), ("ARRAY['e1', 'e2']", "NULL", "ARRAY[1, 1]"),
                ("ARRAY['e1', 'e2']", "ARRAY['r1', 'r2']", "ARRAY[1]"),
            ] {
                await #expect(throws: PSQLError.self) {
                    try await client.query(
                        PostgresQuery(
                            unsafeSQL: """
                                INSERT INTO push_batches (notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids,
                                                          event_ids, relays, wrap_counts, size, expires_at)
                                VALUES ('gift_wrap', '', '', ARRAY['t1', 't2'], ARRAY['p1', 'p2'], ARRAY[gen_random_uuid(), gen_random_uuid()],
                                        \(events), \(relays), \(counts), 2, now() + interval '1 hour')
                                """), logger: TestDatabase.logger)
                }
            }
            let stored = try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches")
            #expect(stored == 0)
        }
    }
}
