import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import Testing

/// A typed push is queued as one batch (`push_batches`): claimed, leased and finished as a whole,
/// its members checked against their devices when claimed, its retries turned into jobs of their
/// own with their apns-ids, and its devices erased with their account. Against a real PostgreSQL,
/// with a scripted sender.
@Suite(.serialized) struct PushBatchTests {
    /// Queues `POST /v1/push` for `recipients` through the gateway's statement, not leased.
    static func queue(_ client: PostgresClient, _ event: String, to recipients: [String], conversation: String = "C1") async throws
        -> EnqueuePushStatement.Row
    {
        let rows = try await Database(client).execute(
            EnqueuePushStatement(
                sender: Keys.generate().publicKey.hex, replayKey: "key-\(event)", replayExpires: Date().addingTimeInterval(600),
                recipients: recipients, eventID: event, notificationType: .newPost, conversationID: conversation,
                lifetimeSeconds: 900, skipRelayWatchDevices: false), logger: TestDatabase.logger)
        return try #require(rows.first)
    }

    @Test func aPushOfManyDevicesIsOneRowAndEachOutcomeLandsWhereItShould() async throws {
        try await TestDatabase.with { _, client in
            let devices = DeliveryTests.devices(4)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            let row = try await Self.queue(client, "ev-batch", to: devices.map(\.pubkey))
            #expect(row.fresh && row.recipients == 4 && row.jobs == 4)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches WHERE size = 4") == 1, "one row")
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 0, "no job per device")
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_queue") == 4, "four pushes pending")

            let answers: [String: PushSendResult] = [
                devices[0].token: .apns(status: 200),
                devices[1].token: .apns(status: 500, reason: "InternalServerError"),
                devices[2].token: .apns(status: 400, reason: "BadDeviceToken"),
                devices[3].token: .apns(status: 400, reason: "BadCollapseId"),
            ]
            let sender = DeliveryTests.ScriptedSender { answers[$0.deviceToken] ?? .apns(status: 200) }
            var worker = DeliveryWorker(
                queue: DeliveryQueue(client: client, logger: TestDatabase.logger), sender: sender, logger: TestDatabase.logger)
            worker.retryPolicy.baseSeconds = 60
            #expect(try await worker.runOnce() == 4)
            let sent = sender.sent.withLock { $0 }
            #expect(sent.allSatisfy { $0.inBatch && $0.attempts == 1 })
            #expect(Set(sent.map(\.apnsID)).count == 4, "an apns-id per device")

            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches") == 0, "the batch is finished")
            let retried = try #require(sent.first { $0.deviceToken == devices[1].token })
            #expect(
                try await TestDatabase.count(
                    client,
                    """
                    SELECT count(*)::int FROM push_jobs WHERE device_token = '\(devices[1].token)' AND pubkey = '\(devices[1].pubkey)'
                    AND apns_id = '\(retried.apnsID.uuidString)' AND attempts = 1 AND last_error = 'InternalServerError'
                    AND locked_until IS NULL AND next_attempt_at > now() + interval '50 seconds' AND NOT direct
                    AND event_id = 'ev-batch' AND conversation_id = 'C1' AND notification_type = 'new_post'
                    """) == 1, "the 500 is a job of its own, with its apns-id, backing off")
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 1, "nothing else is queued")
            #expect(
                try await TestDatabase.count(client, "SELECT count(*)::int FROM devices WHERE device_token = '\(devices[2].token)'") == 0,
                "BadDeviceToken removes the device")

            // The retry goes out as a job, with the same apns-id and its next attempt number.
            try await client.query("UPDATE push_jobs SET next_attempt_at = now()", logger: TestDatabase.logger)
            let again = try await DeliveryQueue(client: client, logger: TestDatabase.logger).claim(limit: 10)
            #expect(again.map(\.apnsID) == [retried.apnsID] && again.allSatisfy { !$0.inBatch && $0.attempts == 2 })
        }
    }

    @Test func theClaimSkipsMembersThatWentAndDeletesABatchWithNoneLeft() async throws {
        try await TestDatabase.with { _, client in
            let devices = DeliveryTests.devices(3)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            _ = try await Self.queue(client, "ev-1", to: devices.map(\.pubkey))
            // After queueing: one device unregistered, one owner archives the conversation.
            try await client.query("DELETE FROM devices WHERE device_token = \(devices[0].token)", logger: TestDatabase.logger)
            try await client.query(
                "INSERT INTO archived_conversations (pubkey, conversation_id) VALUES (\(devices[1].pubkey), 'C1')",
                logger: TestDatabase.logger)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_queue") == 1, "the view shows what would be sent")
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10)
            #expect(claimed.map(\.deviceToken) == [devices[2].token])

            // A batch whose only device moved to another pubkey: nothing to send, and it goes.
            try await queue.finish(claimed)
            _ = try await Self.queue(client, "ev-2", to: [devices[2].pubkey])
            try await client.query(
                "UPDATE devices SET pubkey = \(Keys.generate().publicKey.hex) WHERE device_token = \(devices[2].token)",
                logger: TestDatabase.logger)
            #expect(try await queue.claim(limit: 10).isEmpty)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches") == 0)
        }
    }

    @Test func aFinishFromALapsedLeaseLeavesTheNewerClaimAlone() async throws {
        try await TestDatabase.with { _, client in
            let devices = DeliveryTests.devices(2)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            _ = try await Self.queue(client, "ev-lapse", to: devices.map(\.pubkey))
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let first = try await queue.claim(limit: 10, leaseSeconds: 60)
            #expect(first.count == 2 && first.allSatisfy { $0.attempts == 1 })
            try await DeliveryTests.expireLeases(client)
            let second = try await queue.claim(limit: 10)
            #expect(Set(second.map(\.apnsID)) == Set(first.map(\.apnsID)), "the same pushes, the same apns-ids")
            #expect(second.allSatisfy { $0.attempts == 2 })

            // The first claimer finishes late, with a retry: neither touches the newer claim.
            try await queue.finish([first[0]], retrying: [MemberRetry(member: first[1], delaySeconds: 1, reason: "InternalServerError")])
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches WHERE attempts = 2") == 1)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_jobs") == 0, "no retry for a batch it lost")
            try await queue.finish(second)
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches") == 0)
        }
    }

    @Test func concurrentClaimersNeverShareABatch() async throws {
        try await TestDatabase.with { url, client in
            let devices = DeliveryTests.devices(5)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            for index in 0..<12 { _ = try await Self.queue(client, "ev-\(index)", to: devices.map(\.pubkey)) }
            let other = GatewayApplication.postgresClient(url, logger: TestDatabase.logger)
            let claimed = try await withThrowingTaskGroup(of: [ClaimedJob].self) { group in
                group.addTask {
                    await other.run()
                    return []
                }
                let a = DeliveryQueue(client: client, logger: TestDatabase.logger)
                let b = DeliveryQueue(client: other, logger: TestDatabase.logger)
                async let first = [
                    a.claim(limit: 5), a.claim(limit: 5), a.claim(limit: 5), a.claim(limit: 5), a.claim(limit: 5), a.claim(limit: 5),
                ]
                async let second = [
                    b.claim(limit: 5), b.claim(limit: 5), b.claim(limit: 5), b.claim(limit: 5), b.claim(limit: 5), b.claim(limit: 5),
                ]
                var all = try await (first + second).flatMap { $0 }
                // A claim locks up to its limit of batches at the head and takes only those
                // that fit, so a concurrent claim can find the rest locked and come back
                // empty: they are due again at once, and one more claim drains them.
                while case let more = try await a.claim(limit: 60), !more.isEmpty { all += more }
                group.cancelAll()
                return all
            }
            #expect(claimed.count == 60, "every push claimed once")
            #expect(Set(claimed.map(\.apnsID)).count == claimed.count, "no push claimed twice")
            #expect(Set(claimed.map(\.id)).count == 12, "whole batches")
        }
    }

    /// A cancellation holds even when it is undone before the batch is claimed: a device
    /// unregistered and registered again, a token moved away and back, a conversation archived
    /// and unarchived. Before batches each of these deleted the queued job outright.
    @Test func aCancelledPushStaysCancelledWhenTheCancelIsUndoneBeforeTheClaim() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate(), dave = Keys.generate()
            let (bobs, carols, daves) = (GatewayHarness.token(0x41), GatewayHarness.token(0x42), GatewayHarness.token(0x43))
            for (keys, token) in [(bob, bobs), (carol, carols), (dave, daves)] {
                try await gateway.send(keys, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token))
            }
            let push = ArchiveAndPushTests.pushBody(to: [bob, carol, dave])
            #expect(try await gateway.send(alice, .post, "/v1/push", json: push).json?["candidate_devices"] == 3)
            // A device's registration time is stored to the microsecond; the cancels come later.
            try await Task.sleep(for: .milliseconds(20))

            try await gateway.send(bob, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(bobs)"}"#)
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(bobs))
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(carols))
            try await gateway.send(carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(carols))
            try await gateway.send(dave, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["C1"]}"#)
            try await gateway.send(dave, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":[]}"#)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_batches WHERE '\(dave.publicKey.hex)' = ANY (pubkeys)") == 0,
                "archiving took Dave's device out of the batch")
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)

            let queue = DeliveryQueue(client: gateway.database, logger: TestDatabase.logger)
            #expect(try await queue.claim(limit: 10).isEmpty, "nothing to send")
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 0, "and the batch went")

            // The same devices, registered as they are now, get the next push.
            #expect(
                try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(event: "ev2", to: [bob, carol, dave]))
                    .json?["candidate_devices"] == 3)
            #expect(Set(try await queue.claim(limit: 10).map(\.deviceToken)) == [bobs, carols, daves])
        }
    }

    /// A member taken out of its batch while it was in flight (its owner archived the
    /// conversation), or whose device was registered again meanwhile, is not queued again when
    /// its push service asks for a retry.
    @Test func aMemberCancelledInFlightIsNotRetried() async throws {
        try await TestDatabase.with { _, client in
            let devices = DeliveryTests.devices(3)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            _ = try await Self.queue(client, "ev-flight", to: devices.map(\.pubkey))
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10)
            #expect(claimed.count == 3)
            try await Database(client).withConnection { connection in
                try await BatchMembersRemoval(pubkey: devices[0].pubkey, conversationIDs: ["C1"]).run(
                    on: connection, logger: TestDatabase.logger)
            }
            try await client.query("DELETE FROM devices WHERE device_token = \(devices[1].token)", logger: TestDatabase.logger)
            try await DeliveryTests.seed(client, devices: [devices[1]], jobsPerDevice: 0)
            try await queue.finish([], retrying: claimed.map { MemberRetry(member: $0, delaySeconds: 1, reason: "InternalServerError") })
            #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM push_batches") == 0)
            let retried = try await TestDatabase.rows(client, "SELECT pubkey FROM push_jobs")
            #expect(retried == [#"{"pubkey":"\#(devices[2].pubkey)"}"#], "only the member still in the batch, on the same registration")
        }
    }

    /// A backlog of small batches drains many per round, not one.
    @Test func aClaimTakesWholeBatchesUpToItsLimit() async throws {
        try await TestDatabase.with { _, client in
            let devices = DeliveryTests.devices(3)
            try await DeliveryTests.seed(client, devices: devices, jobsPerDevice: 0)
            for index in 0..<10 { _ = try await Self.queue(client, "one-\(index)", to: [devices[0].pubkey]) }
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            let first = try await queue.claim(limit: 4)
            #expect(first.count == 4 && Set(first.map(\.id)).count == 4, "four batches of one")
            _ = try await Self.queue(client, "three", to: devices.map(\.pubkey))
            try await client.query(
                "UPDATE push_batches SET next_attempt_at = now() - interval '1 hour' WHERE event_id = 'three'", logger: TestDatabase.logger)
            let second = try await queue.claim(limit: 2)
            #expect(second.count == 3 && second.allSatisfy { $0.notification.eventID == "three" }, "a batch over the limit goes whole")
            let rest = try await queue.claim(limit: 100)
            #expect(rest.count == 6)

            // Two batches of three at a limit of four: the first whole, the second left for later.
            _ = try await Self.queue(client, "three-a", to: devices.map(\.pubkey))
            _ = try await Self.queue(client, "three-b", to: devices.map(\.pubkey))
            let third = try await queue.claim(limit: 4)
            #expect(third.count == 3 && Set(third.map(\.id)).count == 1, "no more than the limit once a batch is in")
            #expect(try await queue.claim(limit: 4).count == 3)
        }
    }

    @Test func erasingAnAccountTakesItsDevicesOutOfQueuedBatches() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate()
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x31)))
            try await gateway.send(carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x32)))
            let both = ArchiveAndPushTests.pushBody(event: "both", to: [alice, carol])
            #expect(try await gateway.send(bob, .post, "/v1/push", json: both).json?["candidate_devices"] == 2)
            let hers = ArchiveAndPushTests.pushBody(event: "hers", to: [alice])
            #expect(try await gateway.send(bob, .post, "/v1/push", json: hers).json?["candidate_devices"] == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches") == 2)

            #expect(try await gateway.send(alice, .delete, "/v1/account").status == .ok)
            let alicePub = alice.publicKey.hex, carolPub = carol.publicKey.hex
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches WHERE '\(alicePub)' = ANY (pubkeys)") == 0)
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_batches WHERE event_id = 'both' AND size = 1 AND pubkeys = ARRAY['\(carolPub)']
                    AND device_tokens = ARRAY['\(GatewayHarness.token(0x32))'] AND cardinality(apns_ids) = 1
                    """) == 1, "Carol's push stays queued")
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_batches WHERE event_id = 'hers'") == 0, "a batch left empty goes")
        }
    }
}
