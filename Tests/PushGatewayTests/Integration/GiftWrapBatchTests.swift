import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
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
                    "SELECT count(*)::int FROM device_pacing WHERE next_at <= now() + interval '1 second'") == 2,
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

    /// A member whose device went (unregistered), moved to another pubkey, or was registered
    /// again after the wraps were recorded is not sent when the batch is claimed after a lapsed
    /// lease, and not queued again when its send asks for a retry: what a queued job's removal
    /// with its device did before.
    @Test func aMemberWhoseDeviceWentOrChangedHandsIsNeitherClaimedNorRetried() async throws {
        try await RelayWatchTests.withWatchingStore(token: 0xC3) { gateway, bob, store in
            let carol = Keys.generate(), dave = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xC4))
            try await RelayWatchTests.registerWatching(gateway, dave, HTTP2DeliveryTests.token(0xC5))
            let record = {
                try await store.record(
                    [bob, carol, dave].map {
                        WrapSighting(
                            wrapID: Self.hex(for: $0), recipient: $0.publicKey.hex, relay: "wss://a.example", phase: .realtime)
                    }, leaseSeconds: 60)
            }
            func unregisterBob() async throws {
                let response = try await gateway.send(
                    bob, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(HTTP2DeliveryTests.token(0xC3))"}"#)
                #expect(response.status == .accepted)
            }
            func registerDaveAgain() async throws {
                try await gateway.database.query(
                    "UPDATE devices SET registered_at = now() + interval '1 second' WHERE pubkey = \(dave.publicKey.hex)",
                    logger: TestDatabase.logger)
            }
            let first = try await record()
            #expect(first.leased.count == 3)
            // Bob unregisters; Carol's token moves to another pubkey; Dave's is registered again.
            try await unregisterBob()
            try await gateway.database.query(
                "UPDATE devices SET pubkey = \(Keys.generate().publicKey.hex), registered_at = now() WHERE pubkey = \(carol.publicKey.hex)",
                logger: TestDatabase.logger)
            try await registerDaveAgain()
            try await DeliveryTests.expireLeases(gateway.database)
            let queue = DeliveryQueue(client: gateway.database, logger: TestDatabase.logger)
            #expect(try await queue.claim(limit: 10).isEmpty, "nothing left to send")
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 0, "and the batch went")

            // The same changes while a batch is in flight: its sender's retries queue nothing.
            try await gateway.database.query("DELETE FROM seen_wraps", logger: TestDatabase.logger)
            try await gateway.database.query("DELETE FROM device_pacing", logger: TestDatabase.logger)
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xC3))
            let second = try await record()
            #expect(second.leased.map(\.pubkey).sorted() == [bob.publicKey.hex, dave.publicKey.hex].sorted())
            try await unregisterBob()
            try await registerDaveAgain()
            try await queue.finish(
                [], retrying: second.leased.map { MemberRetry(member: $0, delaySeconds: 0, reason: "InternalServerError") })
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_queue") == 0,
                "no retry for a device that went or was registered again")
        }
    }

    /// An account erased through the API while its wrap's push is in flight leaves the batch; the
    /// other member stays, with its own wrap.
    @Test func deletingTheAccountThroughTheAPITakesItsMemberOut() async throws {
        try await Self.recordTwo { gateway, bob, carol, _ in
            let deleted = try await gateway.send(bob, .delete, "/v1/account")
            #expect(deleted.status == .ok)
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM push_batches WHERE size = 1 AND event_ids = ARRAY['\(Self.wrapB)'] AND pubkeys = ARRAY['\(carol.publicKey.hex)']"
                ) == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 1)
        }
    }

    /// In one statement: a device due now is leased in the batch, one inside its coalescing
    /// window gets a queued job (which a later wrap merges into), one whose budget is spent gets
    /// nothing; the counts say so.
    @Test func oneStatementLeasesQueuesAndRefusesAsBefore() async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 30, shards: 8, leaseSeconds: 30)) {
            gateway in
            let (bob, carol, dave) = (Keys.generate(), Keys.generate(), Keys.generate())
            for (keys, seed) in [(bob, UInt8(0xC6)), (carol, 0xC7), (dave, 0xC8)] {
                try await RelayWatchTests.registerWatching(gateway, keys, HTTP2DeliveryTests.token(seed))
            }
            try await gateway.database.query(
                """
                INSERT INTO device_pacing (device_token, tokens, updated_at, next_at)
                SELECT device_token, 0, 'epoch', now() + interval '20 seconds' FROM devices WHERE pubkey = \(carol.publicKey.hex)
                """, logger: TestDatabase.logger)
            try await gateway.database.query(
                """
                INSERT INTO device_pacing (device_token, tokens, updated_at)
                SELECT device_token, 0, now() FROM devices WHERE pubkey = \(dave.publicKey.hex)
                """, logger: TestDatabase.logger)
            let store = WatchStore(client: gateway.database, settings: gateway.configuration.watch, logger: TestDatabase.logger)
            let sight = { (keys: Keys, wrap: String) in
                WrapSighting(wrapID: wrap, recipient: keys.publicKey.hex, relay: "wss://a.example", phase: .realtime)
            }
            let result = try await store.record(
                [sight(bob, Self.hex(for: bob)), sight(carol, Self.hex(for: carol)), sight(dave, Self.hex(for: dave))], leaseSeconds: 60)
            #expect(result.claimed == 3 && result.jobs == 2 && result.merged == 0 && result.overBudget == 1)
            #expect(result.leased.map(\.pubkey) == [bob.publicKey.hex])
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches WHERE size = 1") == 1)
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_jobs WHERE pubkey = '\(carol.publicKey.hex)' AND locked_until IS NULL AND attempts = 0
                      AND NOT direct AND next_attempt_at > now() + interval '15 seconds'
                    """) == 1, "queued for the window's end")
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 2, "nothing for Dave")
            // Each window moved by the coalescing time past when its push is due; Dave's, refused,
            // did not move.
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM device_pacing p JOIN devices d USING (device_token)
                    WHERE (d.pubkey = '\(bob.publicKey.hex)' AND p.next_at BETWEEN now() + interval '29 seconds' AND now() + interval '31 seconds')
                       OR (d.pubkey = '\(carol.publicKey.hex)' AND p.next_at BETWEEN now() + interval '49 seconds' AND now() + interval '51 seconds')
                       OR (d.pubkey = '\(dave.publicKey.hex)' AND p.next_at IS NULL AND p.tokens = 0)
                    """) == 3)

            let later = String(repeating: "f0", count: 32)
            let merged = try await store.record([sight(carol, later)], leaseSeconds: 60)
            #expect(merged.merged == 1 && merged.jobs == 0 && merged.leased.isEmpty)
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM push_jobs WHERE pubkey = '\(carol.publicKey.hex)' AND event_id = '\(later)' AND wrap_count = 2"
                ) == 1, "the later wrap merged into the queued job")
        }
    }

    /// A push that waits for its device's window wakes no delivery loop: the loops' poll finds
    /// it once it is due (waking them cost two empty claims a loop). One due now that direct
    /// delivery had no room for wakes them all at once.
    @Test func onlyAPushDueNowWakesTheDeliveryLoops() async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 30, shards: 8, leaseSeconds: 30)) {
            gateway in
            let (bob, carol) = (Keys.generate(), Keys.generate())
            for (keys, seed) in [(bob, UInt8(0xD1)), (carol, 0xD2)] {
                try await RelayWatchTests.registerWatching(gateway, keys, HTTP2DeliveryTests.token(seed))
            }
            let store = WatchStore(
                client: gateway.database, settings: gateway.configuration.watch, deviceBudget: nil, logger: TestDatabase.logger)
            // The ticker's interval is an hour: only the recorder can wake the loop here.
            let wakeup = WakeupSignal(interval: .seconds(3600))
            let direct = DirectDelivery(leaseSeconds: 60) { _ in }
            let recorder = SightingRecorder(store: store, metrics: GatewayMetrics(), wakeup: wakeup, directDelivery: direct)
            let sight = { (keys: Keys, wrap: String) in
                WrapSighting(wrapID: wrap, recipient: keys.publicKey.hex, relay: "wss://a.example", phase: .realtime)
            }
            let loop = Task { await wakeup.wait() }
            #expect(try await GatewayHarness.eventually(within: 5) { wakeup.waiting == 1 })

            let first = try await recorder.record([sight(bob, Self.hex(for: bob))])
            #expect(first.leased.count == 1 && first.jobs == 1 && first.leasedDue, "due now: leased and sent from here")
            let second = try await recorder.record([sight(bob, String(repeating: "d1", count: 32))])
            #expect(second.jobs == 1 && second.leased.isEmpty, "inside the window: queued for its end")
            #expect(wakeup.waiting == 1, "a push that waits for its window woke the loop")

            // Without room in direct delivery (here, none at all) a push due now is the loops'.
            let full = SightingRecorder(store: store, metrics: GatewayMetrics(), wakeup: wakeup, directDelivery: nil)
            let third = try await full.record([sight(carol, Self.hex(for: carol))])
            #expect(third.jobs == 1 && third.leased.isEmpty && !third.leasedDue)
            #expect(wakeup.waiting == 0, "a push due now left the loop asleep")
            // Should the loop still wait (a regression), the test ends here instead of at the tick.
            wakeup.signal()
            _ = await loop.value
        }
    }

    /// Without a budget (`PUSH_DEVICE_BUDGET=0`) the pacing row still holds each device's
    /// coalescing window, and its tokens are left alone: a spent bucket refuses nothing, and a
    /// new row's bucket is full for when a budget is set.
    @Test func withoutABudgetTheWindowStillPacesAndTokensStay() async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 30, shards: 8, leaseSeconds: 30)) {
            gateway in
            let (bob, carol) = (Keys.generate(), Keys.generate())
            for (keys, seed) in [(bob, UInt8(0xCA)), (carol, 0xCB)] {
                try await RelayWatchTests.registerWatching(gateway, keys, HTTP2DeliveryTests.token(seed))
            }
            try await gateway.database.query(
                """
                INSERT INTO device_pacing (device_token, tokens, updated_at)
                SELECT device_token, 0, now() - interval '1 second' FROM devices WHERE pubkey = \(carol.publicKey.hex)
                """, logger: TestDatabase.logger)
            let store = WatchStore(
                client: gateway.database, settings: gateway.configuration.watch, deviceBudget: nil, logger: TestDatabase.logger)
            let sight = { (keys: Keys, wrap: String) in
                WrapSighting(wrapID: wrap, recipient: keys.publicKey.hex, relay: "wss://a.example", phase: .realtime)
            }
            let first = try await store.record([sight(bob, Self.hex(for: bob)), sight(carol, Self.hex(for: carol))], leaseSeconds: 60)
            #expect(first.overBudget == 0 && first.leased.map(\.pubkey).sorted() == [bob.publicKey.hex, carol.publicKey.hex].sorted())
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM device_pacing p JOIN devices d USING (device_token)
                    WHERE p.next_at BETWEEN now() + interval '25 seconds' AND now() + interval '35 seconds'
                      AND ((d.pubkey = '\(bob.publicKey.hex)' AND p.tokens = 0 AND p.updated_at = 'epoch')
                        OR (d.pubkey = '\(carol.publicKey.hex)' AND p.tokens = 0 AND p.updated_at < now() - interval '0.5 seconds'))
                    """) == 2, "both windows moved; bob's new bucket full, carol's tokens untouched")

            let second = try await store.record([sight(bob, String(repeating: "f1", count: 32))], leaseSeconds: 60)
            #expect(second.jobs == 1 && second.leased.isEmpty, "inside the window: queued for its end")
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_jobs WHERE pubkey = '\(bob.publicKey.hex)' AND locked_until IS NULL
                      AND next_attempt_at > now() + interval '25 seconds'
                    """) == 1)
        }
    }

    /// The inbox relay's stored wraps take the same path: a lapsed lease brings its member back
    /// with the inbox's URL as the relay.
    @Test func anInboxWrapsBatchComesBackWhenItsLeaseLapses() async throws {
        try await RelayWatchTests.withWatchingStore(token: 0xC9) { gateway, bob, _ in
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger)
            let wrap = try RelayWatchTests.wrap(to: bob)
            let pushing = StoreInboxWrapsStatement.Pushing(
                relay: "ws://inbox.test/relay", coalesceSeconds: 60, lifetimeSeconds: 3600, leaseSeconds: 60, budget: .default)
            let result = try await store.store([(wrap, bob.publicKey.hex)], pushing: pushing)
            #expect(result.outcomes == [.stored] && result.record.leased.count == 1)
            let expected = APNsNotification.giftWrap(
                wrapID: wrap.id.hex, relay: "ws://inbox.test/relay", count: 1, recipient: bob.publicKey.hex)
            #expect(result.record.leased.first?.notification == expected && result.record.leased.first?.inBatch == true)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 0)
            try await DeliveryTests.expireLeases(gateway.database)
            let again = try await DeliveryQueue(client: gateway.database, logger: TestDatabase.logger).claim(limit: 10)
            #expect(again.map(\.notification) == [expected])
            #expect(again.first?.apnsID == result.record.leased.first?.apnsID && again.first?.attempts == 2)
        }
    }

    /// A wrap id made from a user's key: distinct per user, stable within a test.
    static func hex(for keys: Keys) -> String { String(keys.publicKey.hex.reversed()) }

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
