import APNsSandbox
import Foundation
import Logging
import NostrProtocol
import NostrRelay
@testable import PushGateway
import Testing
import TestSupport

/// The relay watcher end to end: a real relay (`nostr-relay` from PyPI) on loopback, the gateway
/// on a real PostgreSQL, pushes counted where they land, in the APNs sandbox.
@Suite(.serialized) struct RelayWatchTests {
    static func settings(_ relays: [RelayFixture], coalesceSeconds: Int = 0) -> WatchSettings {
        WatchSettings(relays: relays.map(\.url), chunkSize: 500, coalesceSeconds: coalesceSeconds, shards: 8, leaseSeconds: 30)
    }

    static func registerWatching(_ gateway: GatewayHarness, _ keys: Keys, _ token: String, watch: Bool = true) async throws {
        let response = try await gateway.send(keys, .post, "/v1/devices/register",
                                              json: GatewayHarness.registerBody(token, extra: #","relay_watch":\#(watch)"#))
        #expect(response.status == .accepted)
    }

    /// A gift wrap from `sender` to `recipient`, made by the foundation module.
    static func wrap(to recipient: Keys, from sender: Keys = Keys.generate(), _ text: String = "hello") throws -> NostrEvent {
        let rumor = UnsignedEvent(pubkey: sender.publicKey, kind: 14, tags: [["p", recipient.publicKey.hex]], content: text)
        return try GiftWrap.make(rumor, author: sender, recipient: recipient.publicKey)
    }

    /// Publishes through a fresh client connection and waits for the relay's OK.
    static func publish(_ events: [NostrEvent], to relay: RelayFixture) async throws {
        var configuration = RelayConfiguration()
        configuration.publishTimeout = .seconds(5)
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: TestDatabase.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await connection.run() }
            defer { group.cancelAll() }
            for event in events {
                let result = try await connection.publish(event)
                #expect(result.accepted, "relay accepted \(event.id.hex): \(result.message)")
            }
        }
    }

    /// The watcher's status as `/admin/status` shows it.
    static func watchStatus(_ gateway: GatewayHarness) async throws -> JSONValue? {
        let response = try await gateway.client.execute(uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
        return response.json?["watch"]
    }

    /// Waits until every relay's subscription covers `pubkeys` watched pubkeys past EOSE.
    static func waitLive(_ gateway: GatewayHarness, pubkeys: Int, within seconds: Double = 10) async throws -> Bool {
        try await GatewayHarness.eventually(within: seconds) {
            guard case .array(let relays)? = try await watchStatus(gateway)?["relays"] else { return false }
            return !relays.isEmpty && relays.allSatisfy { $0["live_pubkeys"] == .integer(Int64(pubkeys)) }
        }
    }

    static func giftWrapDeliveries(_ sandbox: SandboxFixture) -> [DeliveryRecord] {
        sandbox.delivered().filter { (try? JSONValue(parsing: $0.payload))?["type"] == "gift_wrap" }
    }

    @Test func aLiveWrapIsPushedOnceHistoryAndStrangersNever() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate(), carol = Keys.generate(), stranger = Keys.generate()
        // On the relay before anyone watched: history.
        let old = try Self.wrap(to: bob, "before")
        try await Self.publish([old], to: relay)
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                let bobToken = HTTP2DeliveryTests.token(0xC1), carolToken = HTTP2DeliveryTests.token(0xC2)
                try await Self.registerWatching(gateway, bob, bobToken)
                // Carol registered the way today's app does: typed pushes only.
                try await Self.registerWatching(gateway, carol, carolToken, watch: false)
                #expect(try await Self.waitLive(gateway, pubkeys: 1), "bob's subscription reached EOSE")

                let live = try Self.wrap(to: bob, "live")
                try await Self.publish([live, try Self.wrap(to: carol), try Self.wrap(to: stranger)], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                let record = try #require(Self.giftWrapDeliveries(sandbox).first)
                #expect(record.deviceToken == bobToken)
                #expect(record.collapseID == bob.publicKey.hex, "one collapse id per recipient")
                #expect(record.pushType == "alert")
                let payload = try JSONValue(parsing: record.payload)
                #expect(payload == [
                    "aps": ["alert": ["title": "linkstr", "body": "New activity"], "sound": "default", "mutable-content": 1],
                    "type": "gift_wrap", "wrap_id": .string(live.id.hex), "relay": .string(relay.url), "count": 1,
                ])
                // Give anything wrongly queued time to arrive: still only the live wrap, and the
                // history wrap is recorded as seen.
                try await Task.sleep(for: .milliseconds(800))
                #expect(sandbox.delivered().count == 1)
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(old.id.hex)'") == 1)
                #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 0)

                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains("linkstr_watch_pushes_total{kind=\"queued\"} 1"))
                #expect(metrics.contains("linkstr_watch_relay_to_queue_seconds_count 1"))
            }
        }
    }

    @Test func theSameWrapOnTwoRelaysIsPushedOnceAndForgeriesAreDropped() async throws {
        let first = try RelayFixture(), second = try RelayFixture()
        try await first.start()
        try await second.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([first, second])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD1))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                let wrap = try Self.wrap(to: bob)
                try await Self.publish([wrap], to: first)
                try await Self.publish([wrap], to: second)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })

                try await Task.sleep(for: .milliseconds(500))
                #expect(Self.giftWrapDeliveries(sandbox).count == 1, "the second relay's copy was a duplicate")
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains("linkstr_watch_duplicates_total 1"))
            }
        }
    }

    @Test func aWrapWithABadSignatureIsDroppedAndCounted() async throws {
        // A relay that stores whatever it is sent, like a careless or hostile one.
        let relay = try RelayFixture(validateSignatures: false)
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE1))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                let genuine = try Self.wrap(to: bob)
                // The genuine wrap's id with another event's signature.
                let forged = NostrEvent(id: genuine.id, pubkey: genuine.pubkey, createdAt: genuine.createdAt, kind: genuine.kind,
                                        tags: genuine.tags, content: genuine.content, sig: try Self.wrap(to: bob).sig)
                try await Self.publish([forged], to: relay)
                #expect(try await GatewayHarness.eventually {
                    String(decoding: await gateway.metrics.exposition(), as: UTF8.self).contains("linkstr_watch_invalid_events_total{relay=\"\(relay.url)\"} 1")
                })
                try await Task.sleep(for: .milliseconds(500))
                #expect(sandbox.delivered().isEmpty)
                // The forgery did not mark the real wrap as seen.
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps") == 0)
            }
        }
    }
}
