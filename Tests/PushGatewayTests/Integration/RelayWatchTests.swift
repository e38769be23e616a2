import APNsSandbox
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import Logging
import NostrProtocol
import NostrRelay
import PostgresNIO
import PushGateway
import TestSupport
import Testing

/// The relay watcher end to end: a real relay (`nostr-relay` from PyPI) on loopback, the gateway
/// on a real PostgreSQL, pushes counted where they land, in the APNs sandbox.
@Suite(.serialized) struct RelayWatchTests {
    static func settings(_ relays: [RelayFixture], coalesceSeconds: Int = 0) -> WatchSettings {
        WatchSettings(relays: relays.map(\.url), chunkSize: 500, coalesceSeconds: coalesceSeconds, shards: 8, leaseSeconds: 30)
    }

    static func registerWatching(_ gateway: GatewayHarness, _ keys: Keys, _ token: String, watch: Bool = true) async throws {
        let response = try await gateway.send(
            keys, .post, "/v1/devices/register",
            json: GatewayHarness.registerBody(token, extra: #","relay_watch":\#(watch)"#))
        #expect(response.status == .accepted)
    }

    /// A gift wrap from `sender` to `recipient`, made by the foundation module; dated `createdAt`
    /// when given, else at random up to two days back as NIP-59 has it.
    static func wrap(
        to recipient: Keys, from sender: Keys = Keys.generate(), _ text: String = "hello", createdAt: Int64? = nil
    ) throws -> NostrEvent {
        let rumor = UnsignedEvent(pubkey: sender.publicKey, kind: 14, tags: [["p", recipient.publicKey.hex]], content: text)
        let seal = try GiftWrap.seal(rumor, author: sender, recipient: recipient.publicKey)
        return try GiftWrap.wrap(seal: seal, recipient: recipient.publicKey, createdAt: createdAt)
    }

    /// A gift wrap made before the REQ that must find it, backdated by at most a day.
    ///
    /// A wrap's `created_at` may lie up to two days back, and a REQ asks for `since` two days
    /// before it is sent: a wrap made at T and fully backdated falls outside a REQ sent at T + s
    /// with odds s / 172,800. Half the jitter keeps such a wrap inside every window these tests open.
    static func storedWrap(to recipient: Keys, from sender: Keys = Keys.generate(), _ text: String = "hello") throws -> NostrEvent {
        try wrap(to: recipient, from: sender, text, createdAt: UnixTime.now() - Int64.random(in: 0...GiftWrap.timestampJitter / 2))
    }

    /// Runs a gateway until `keys` is live on its relays and recorded so in `watch_live`, stops it
    /// gracefully (every shard given back, dated), and moves that moment ten minutes back: as if
    /// the shards had been without a watcher that long, which a test cannot wait for.
    static func watchThenLeaveUnwatchedTenMinutes(
        _ keys: Keys, token: String, url: DatabaseURL, database: PostgresClient, watch settings: WatchSettings
    ) async throws {
        try await GatewayHarness.run(url: url, database: database, watch: settings) { gateway in
            try await registerWatching(gateway, keys, token)
            #expect(try await waitLive(gateway, pubkeys: 1))
            #expect(
                try await GatewayHarness.eventually {
                    try await gateway.count("SELECT count(*)::int FROM watch_live WHERE pubkey = '\(keys.publicKey.hex)'") == 1
                }, "recorded live for whoever watches next")
        }
        #expect(
            try await TestDatabase.count(
                database, "SELECT count(*)::int FROM watch_shards WHERE owner IS NULL AND expires_at > now() - interval '1 minute'")
                == settings.shards, "the graceful stop gave every shard back, dated")
        try await database.query("UPDATE watch_shards SET expires_at = expires_at - interval '10 minutes'", logger: TestDatabase.logger)
    }

    /// Publishes through a fresh client connection and waits for the relay's OK.
    static func publish(_ events: [NostrEvent], to relay: RelayFixture) async throws {
        var configuration = RelayConfiguration()
        // Generous: the Python relay answers slowly while the whole suite runs in parallel, and
        // how fast it says OK is not what these tests check (a run of 62 tests once saw 5 s pass).
        configuration.publishTimeout = .seconds(20)
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: TestDatabase.logger)
        try await connection.running {
            for event in events {
                let result = try await connection.publish(event)
                #expect(result.accepted, "relay accepted \(event.id.hex): \(result.message)")
            }
        }
    }

    /// The watcher's status as `/admin/status` shows it.
    /// A gateway that watches no relay, a user watching through one device, and the watcher's
    /// store: for tests of what the record statement claims.
    static func withWatchingStore(
        token seed: UInt8, _ body: @Sendable (GatewayHarness, Keys, WatchStore) async throws -> Void
    ) async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30)) {
            gateway in
            let user = Keys.generate()
            try await registerWatching(gateway, user, HTTP2DeliveryTests.token(seed))
            try await body(
                gateway, user, WatchStore(client: gateway.database, settings: gateway.configuration.watch, logger: TestDatabase.logger))
        }
    }

    static func watchStatus(_ gateway: GatewayHarness) async throws -> JSONValue? {
        let response = try await gateway.client.execute(
            uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
        return response.json?["watch"]
    }

    /// Waits until every relay's subscription covers `pubkeys` watched pubkeys past EOSE.
    static func waitLive(_ gateway: GatewayHarness, pubkeys: Int, within seconds: Double = 30) async throws -> Bool {
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
        let old = try Self.storedWrap(to: bob, "before")
        try await Self.publish([old], to: relay)
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                let bobToken = HTTP2DeliveryTests.token(0xC1), carolToken = HTTP2DeliveryTests.token(0xC2)
                try await Self.registerWatching(gateway, bob, bobToken)
                // Carol registered the way today's app does: typed pushes only.
                try await Self.registerWatching(gateway, carol, carolToken, watch: false)
                #expect(try await Self.waitLive(gateway, pubkeys: 1), "bob's subscription reached EOSE")
                // Where bob is live reaches the database from a loop of its own, off the consumer's path.
                #expect(
                    try await GatewayHarness.eventually {
                        try await gateway.count(
                            "SELECT count(*)::int FROM watch_live WHERE pubkey = '\(bob.publicKey.hex)' AND relay = '\(relay.url)'") == 1
                    }, "bob recorded live on the relay for a later takeover")

                let live = try Self.wrap(to: bob, "live")
                try await Self.publish([live, try Self.wrap(to: carol), try Self.wrap(to: stranger)], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                let record = try #require(Self.giftWrapDeliveries(sandbox).first)
                #expect(record.deviceToken == bobToken)
                #expect(record.collapseID == bob.publicKey.hex, "one collapse id per recipient")
                #expect(record.pushType == "alert")
                let payload = try JSONValue(parsing: record.payload)
                #expect(
                    payload == [
                        "aps": ["alert": ["title": "linkstr", "body": "New activity"], "sound": "default", "mutable-content": 1],
                        "type": "gift_wrap", "wrap_id": .string(live.id.hex), "relay": .string(relay.url), "count": 1,
                    ])
                // Give anything wrongly queued time to arrive: still only the live wrap, and the
                // history wrap is recorded as seen.
                try await Task.sleep(for: .milliseconds(800))
                #expect(sandbox.delivered().count == 1)
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(old.id.hex)'") == 1)
                #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)

                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains("linkstr_watch_pushes_total{kind=\"queued\"} 1"))
                #expect(metrics.contains("linkstr_watch_relay_to_queue_seconds_count 1"))

                // Bob goes back to typed pushes only: no longer watched, so where he was live is
                // forgotten (through the same ordered queue as the marks).
                try await Self.registerWatching(gateway, bob, bobToken, watch: false)
                #expect(
                    try await GatewayHarness.eventually {
                        try await gateway.count("SELECT count(*)::int FROM watch_live WHERE pubkey = '\(bob.publicKey.hex)'") == 0
                    }, "bob forgotten once unwatched")
            }
        }
    }

    /// A wrap names one recipient (NIP-59). One with two `p` tags would alert every pubkey it
    /// lists for one signature, so it is ignored, for each of them.
    @Test func aWrapWithMoreThanOnePTagIsIgnored() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate(), carol = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE1))
                try await Self.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xE2))
                #expect(try await Self.waitLive(gateway, pubkeys: 2))
                let both = Keys.generate().sign(
                    kind: EventKind.giftWrap, tags: [["p", bob.publicKey.hex], ["p", carol.publicKey.hex]], content: "x")
                let live = try Self.wrap(to: bob, "after")
                try await Self.publish([both, live], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                try await Task.sleep(for: .milliseconds(800))
                let deliveries = Self.giftWrapDeliveries(sandbox)
                #expect(
                    deliveries.count == 1
                        && deliveries.first.flatMap { try? JSONValue(parsing: $0.payload)["wrap_id"] } == .string(live.id.hex))
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(both.id.hex)'") == 0)
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains("linkstr_watch_invalid_events_total{relay=\"\(relay.url)\"} 1"), "counted as invalid")
            }
        }
    }

    /// Relay-watch alerts spend the same per-device budget as typed pushes: anyone can publish
    /// wraps to a pubkey, so without it a flood of wraps would be a flood of alerts.
    @Test func relayWatchAlertsSpendTheDevicesBudget() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns, watch: Self.settings([relay]),
                deviceBudget: PushBudget(alerts: 2, perSeconds: 3600)
            ) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE3))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                // One at a time, each pushed before the next (no coalescing window in these settings).
                for index in 1...4 {
                    try await Self.publish([try Self.wrap(to: bob, "wrap \(index)")], to: relay)
                    #expect(
                        try await GatewayHarness.eventually {
                            try await gateway.count("SELECT count(*)::int FROM seen_wraps") == index
                        })
                }
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 2 })
                try await Task.sleep(for: .milliseconds(800))
                #expect(Self.giftWrapDeliveries(sandbox).count == 2, "the third and fourth wraps were over budget")
                #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0, "never queued")
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains(#"linkstr_pushes_total{outcome="over_budget",reason="none"} 2"#))
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

                // The second relay's copy arrives, and is counted as the duplicate it is.
                #expect(
                    await eventually {
                        String(decoding: await gateway.metrics.exposition(), as: UTF8.self).contains("linkstr_watch_duplicates_total 1")
                    })
                #expect(Self.giftWrapDeliveries(sandbox).count == 1, "the second relay's copy was a duplicate")
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                // Both relays delivered it; its signature was checked once.
                let samples = { (name: String) in
                    metrics.split(separator: "\n").filter { $0.hasPrefix(name + "{") }.compactMap {
                        $0.split(separator: " ").last.flatMap { Int($0) }
                    }.reduce(0, +)
                }
                #expect(samples("linkstr_watch_events_total") == 2)
                #expect(samples("linkstr_watch_signature_checks_total") == 1)
            }
        }
    }

    /// A gift wrap made by rust-nostr (nip59_make_gift_wrap, through its Python bindings) reaches
    /// the same push as one made here.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func aWrapMadeByRustNostrIsPushed() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let alice = Keys.generate(), bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE7))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                let content = #"{"conversation_id":"X","kind":"root","url":"https://example.com","timestamp":1}"#
                let wrapJSON = try #require(
                    try await RustNostrPeer.call(
                        "gift_wrap",
                        [
                            "sender_secret_key": .string(alice.secretKey.exportHex()), "receiver_pubkey": .string(bob.publicKey.hex),
                            "rumor": .object([
                                "created_at": .integer(UnixTime.now()), "kind": .integer(44001), "tags": .tags([]),
                                "content": .string(content),
                            ]),
                        ]
                    ).stringValue)
                let wrap = try NostrEvent(json: wrapJSON)
                try await Self.publish([wrap], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                let record = try #require(Self.giftWrapDeliveries(sandbox).first)
                #expect(try JSONValue(parsing: record.payload)["wrap_id"] == .string(wrap.id.hex))
            }
        }
    }

    /// rust-nostr's LocalRelay demanding NIP-42 AUTH before it serves a REQ: the watcher answers
    /// the challenge with the gateway's key, its subscription is served, and pushes flow.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func aRelayDemandingAuthIsAnsweredWithTheGatewayKey() async throws {
        let relay = try RelayFixture(implementation: .rustNostr(auth: "read"))
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE9))
                #expect(try await Self.waitLive(gateway, pubkeys: 1), "the REQ was served after AUTH")
                guard case .array(let relays)? = try await Self.watchStatus(gateway)?["relays"] else {
                    Issue.record("no relay status")
                    return
                }
                #expect(relays.first?["state"] == "connected")
                let wrap = try Self.wrap(to: bob)
                try await Self.publish([wrap], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                // The key it answered with is the one stored for every instance.
                #expect(try await gateway.count("SELECT count(*)::int FROM gateway_identity") == 1)
            }
        }
    }

    /// A relay that refuses a REQ (`CLOSED`, here for too many subscriptions) gets that chunk again
    /// later: once a slot is free the chunk is served and its pubkeys get pushes.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func aChunkTheRelayClosedIsIssuedAgain() async throws {
        let relay = try RelayFixture(implementation: .rustNostr(auth: nil, maxSubscriptions: 1))
        try await relay.start()
        let alice = Keys.generate(), bob = Keys.generate()
        let settings: WatchSettings = {
            var settings = Self.settings([relay])
            settings.chunkSize = 1
            return settings
        }()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: settings) { gateway in
                try await Self.registerWatching(gateway, alice, HTTP2DeliveryTests.token(0xEA))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                // Bob's chunk is the second REQ on a relay that allows one: CLOSED.
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xEB))
                #expect(
                    try await GatewayHarness.eventually {
                        String(decoding: await gateway.metrics.exposition(), as: UTF8.self).contains(
                            "linkstr_watch_subscriptions_closed_total 1")
                    }, "the relay closed bob's chunk")
                // Alice leaves; her chunk's CLOSE frees the slot and bob's chunk is issued again.
                let unregister = #"{"device_token":"\#(HTTP2DeliveryTests.token(0xEA))"}"#
                #expect(try await gateway.send(alice, .post, "/v1/devices/unregister", json: unregister).status == .accepted)
                #expect(
                    try await GatewayHarness.eventually(within: 15) {
                        let status = try await Self.watchStatus(gateway)
                        guard case .array(let relays)? = status?["relays"] else { return false }
                        return relays.first?["live_pubkeys"] == 1 && status?["watched_pubkeys"] == 1
                    }, "bob's chunk was served after the retry")
                try await Self.publish([try Self.wrap(to: bob)], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
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
                let forged = NostrEvent(
                    id: genuine.id, pubkey: genuine.pubkey, createdAt: genuine.createdAt, kind: genuine.kind,
                    tags: genuine.tags, content: genuine.content, sig: try Self.wrap(to: bob).sig)
                try await Self.publish([forged], to: relay)
                #expect(
                    try await GatewayHarness.eventually {
                        String(decoding: await gateway.metrics.exposition(), as: UTF8.self).contains(
                            "linkstr_watch_invalid_events_total{relay=\"\(relay.url)\"} 1")
                    })
                try await Task.sleep(for: .milliseconds(500))
                #expect(sandbox.delivered().isEmpty)
                // The forgery did not mark the real wrap as seen.
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps") == 0)
            }
        }
    }

    /// A registration to a chunk whose REQ did not go out in the last `WATCH_RESUBSCRIBE_SECONDS`
    /// is watched at once (one pubkey per chunk here: alice's chunk went out moments before, and a
    /// change to it would wait out the interval, which `aBurstOfRegistrations…` covers). The
    /// interval is 15 s here, so "at once" and "after the interval" stay apart on a slow machine.
    @Test func aRegistrationMadeWhileRunningIsWatchedAtOnce() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let alice = Keys.generate(), dave = Keys.generate()
        try await SandboxFixture.with { sandbox in
            var settings = Self.settings([relay])
            settings.chunkSize = 1
            settings.resubscribeSeconds = 15
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: settings) { gateway in
                try await Self.registerWatching(gateway, alice, HTTP2DeliveryTests.token(0xF1))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                let registered = ContinuousClock.now
                try await Self.registerWatching(gateway, dave, HTTP2DeliveryTests.token(0xF2))
                #expect(try await Self.waitLive(gateway, pubkeys: 2, within: 30))
                let took = ContinuousClock.now - registered
                #expect(took < .seconds(10), "registration to live subscription took \(took)")
                try await Self.publish([try Self.wrap(to: dave)], to: relay)
                #expect(
                    try await GatewayHarness.eventually {
                        Self.giftWrapDeliveries(sandbox).map(\.deviceToken) == [HTTP2DeliveryTests.token(0xF2)]
                    })

                // Unregistering stops the watching: the chunk is re-issued without dave.
                let unregister = #"{"device_token":"\#(HTTP2DeliveryTests.token(0xF2))"}"#
                #expect(try await gateway.send(dave, .post, "/v1/devices/unregister", json: unregister).status == .accepted)
                #expect(try await Self.waitLive(gateway, pubkeys: 1, within: 30))
                #expect(try await GatewayHarness.eventually { try await Self.watchStatus(gateway)?["watched_pubkeys"] == 1 })
            }
        }
    }

    /// Forty registrations in a row land in one chunk: its REQ goes out at once for the first,
    /// then at most once per `WATCH_RESUBSCRIBE_SECONDS` with what changed meanwhile, not once per
    /// registration.
    @Test func aBurstOfRegistrationsMakesAFewREQsNotOnePerRegistration() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        let users = (0..<40).map { _ in Keys.generate() }
        try await SandboxFixture.with { sandbox in
            let settings = WatchSettings(relays: [relay.url], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30)
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: settings) { gateway in
                let started = ContinuousClock.now
                for (index, keys) in users.enumerated() {
                    try await Self.registerWatching(gateway, keys, HTTP2DeliveryTests.token(UInt8(0x10 + index)))
                }
                let burst = ContinuousClock.now - started
                #expect(try await Self.waitLive(gateway, pubkeys: users.count, within: 15), "every registration is watched")
                let requests = relay.records.reduce(0) { $0 + $1.requests }
                // One at once, then one per two-second window the burst reached into.
                let bound = 2 + Int(burst / .seconds(2))
                #expect(requests <= bound, "\(requests) REQs for \(users.count) registrations in \(burst)")
                let wrap = try Self.wrap(to: users[users.count - 1])
                relay.publish(wrap)
                #expect(
                    try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 },
                    "the last one registered is watched")
            }
        }
        await relay.stop()
    }

    @Test func aSuppressedSelfCopyIsNotPushed() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xA7))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                // Bob sends a post; his client wraps a copy to himself and suppresses it first.
                let selfCopy = try Self.wrap(to: bob, from: bob, "my own post")
                let response = try await gateway.send(
                    bob, .post, "/v1/suppressions", json: #"{"event_ids":["\#(selfCopy.id.hex.uppercased())"]}"#)
                #expect(response.status == .accepted)
                #expect(response.json?["suppressed"] == 1)
                try await Self.publish([selfCopy], to: relay)
                let fromAlice = try Self.wrap(to: bob, "from alice")
                try await Self.publish([fromAlice], to: relay)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 })
                try await Task.sleep(for: .milliseconds(500))
                let payloads = try Self.giftWrapDeliveries(sandbox).map { try JSONValue(parsing: $0.payload)["wrap_id"] }
                #expect(payloads == [.string(fromAlice.id.hex)], "only the wrap that was not suppressed")
            }
        }
    }

    @Test func badSuppressionsAreRefusedAndStoreNothing() async throws {
        try await GatewayHarness.run { gateway in
            let bob = Keys.generate()
            for (body, message) in [
                (#"{}"#, "event_ids is required"),
                (#"{"event_ids":[]}"#, "event_ids is required"),
                (#"{"event_ids":["abc"]}"#, "event_ids must be 64-character hex event ids"),
                (#"{"event_ids":"x"}"#, nil),
                ("[1]", nil),
            ] {
                let response = try await gateway.send(bob, .post, "/v1/suppressions", json: body)
                #expect(response.status == .badRequest, "\(body)")
                if let message { #expect(response.errorMessage == message) }
            }
            let many = (0...SuppressionRequest.maxEventIDs).map { _ in "\"\(Hex.encode(SecureRandom.bytes(32)))\"" }.joined(separator: ",")
            #expect(try await gateway.send(bob, .post, "/v1/suppressions", json: #"{"event_ids":[\#(many)]}"#).status == .badRequest)
            #expect(
                try await gateway.send(nil, .post, "/v1/suppressions", json: #"{"event_ids":["\#(String(repeating: "a", count: 64))"]}"#)
                    .status == .unauthorized)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_suppressions") == 0)
        }
    }

    @Test func aRelayKilledAndRestartedIsReconnectedAndKeepsDelivering() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xB7))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                relay.kill()
                #expect(
                    try await GatewayHarness.eventually {
                        guard case .array(let relays)? = try await Self.watchStatus(gateway)?["relays"] else { return false }
                        return relays.first?["state"] != "connected"
                    }, "the watcher noticed")
                try await relay.start()
                #expect(
                    try await GatewayHarness.eventually(within: 15) {
                        guard case .array(let relays)? = try await Self.watchStatus(gateway)?["relays"] else { return false }
                        return relays.first?["state"] == "connected" && relays.first?["connections"] == 2
                    }, "reconnected")
                // The REQ is re-sent on the new connection. A wrap the relay takes before that REQ
                // comes back as history, which is never pushed, and nothing outside tells when the
                // REQ has arrived: publish a new wrap every 2 s until one is pushed.
                #expect(
                    try await GatewayHarness.eventually(within: 40) {
                        guard Self.giftWrapDeliveries(sandbox).isEmpty else { return true }
                        try await Self.publish([try Self.wrap(to: bob)], to: relay)
                        try await Task.sleep(for: .seconds(2))
                        return !Self.giftWrapDeliveries(sandbox).isEmpty
                    }, "a wrap published after the reconnect was pushed")
            }
        }
    }

    @Test func aRestartedGatewayDoesNotPushAgainWhatItPushed() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await TestDatabase.with { url, database in
                try await GatewayHarness.run(url: url, database: database, deliver: true, apns: sandbox.apns, watch: Self.settings([relay]))
                { gateway in
                    try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xB8))
                    #expect(try await Self.waitLive(gateway, pubkeys: 1))
                    try await Self.publish([try Self.wrap(to: bob, "one"), try Self.wrap(to: bob, "two")], to: relay)
                    #expect(
                        try await GatewayHarness.eventually {
                            Self.giftWrapDeliveries(sandbox).compactMap { try? JSONValue(parsing: $0.payload)["count"]?.integerValue }
                                .reduce(0, +) == 2
                        })
                }
                let before = sandbox.delivered().count
                // The second run sees both wraps again as history of a new subscription.
                try await GatewayHarness.run(url: url, database: database, deliver: true, apns: sandbox.apns, watch: Self.settings([relay]))
                { gateway in
                    #expect(try await Self.waitLive(gateway, pubkeys: 1))
                    try await Task.sleep(for: .milliseconds(800))
                    #expect(sandbox.delivered().count == before, "nothing pushed twice")
                    let three = try Self.wrap(to: bob, "three")
                    try await Self.publish([three], to: relay)
                    #expect(try await GatewayHarness.eventually { sandbox.delivered().count == before + 1 })
                }
            }
        }
    }

    /// An instance that takes a shard over asks for the wraps dated a window before the moment
    /// the shard's previous owner stopped, not a window before its own start: a wrap published
    /// while nobody watched, dated back the most NIP-59 allows, is pushed. Ten minutes without a
    /// watcher are set in the database (the stopped owner's release moved back), not waited for.
    @Test func aShardTakenOverReachesBackFromWhenItsOwnerStopped() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await TestDatabase.with { url, database in
                try await Self.watchThenLeaveUnwatchedTenMinutes(
                    bob, token: HTTP2DeliveryTests.token(0xBA), url: url, database: database, watch: Self.settings([relay]))
                let window = WatchSettings.windowSeconds
                // Made in the gap: dated back further than `now − window`, within the window of
                // the moment the owner stopped. And one dated before that window, which no wrap
                // made in the gap can be: the reach is what it says, not unbounded.
                let inGap = try Self.wrap(to: bob, from: bob, "in the gap", createdAt: UnixTime.now() - window - 300)
                let beforeReach = try Self.wrap(to: bob, from: bob, "before the reach", createdAt: UnixTime.now() - window - 3_600)
                try await Self.publish([inGap, beforeReach], to: relay)
                try await GatewayHarness.run(url: url, database: database, deliver: true, apns: sandbox.apns, watch: Self.settings([relay]))
                { gateway in
                    #expect(try await Self.waitLive(gateway, pubkeys: 1))
                    #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 }, "the gap's wrap pushed")
                    let record = try #require(Self.giftWrapDeliveries(sandbox).first)
                    #expect(try JSONValue(parsing: record.payload)["wrap_id"] == .string(inGap.id.hex))
                    try await Task.sleep(for: .milliseconds(500))
                    #expect(Self.giftWrapDeliveries(sandbox).count == 1)
                    #expect(
                        try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(beforeReach.id.hex)'") == 0,
                        "never asked for")
                }
            }
        }
    }

    /// The REQs themselves, as the relay got them: the instance that takes a shard over asks for
    /// the window before the moment the previous owner stopped, less a minute, and once that REQ
    /// has caught up, a connection lost later resumes from the loss, no longer from the takeover.
    @Test func aTakeoverReachesBackOnlyUntilItsREQCatchesUp() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        let bob = Keys.generate()
        let settings = WatchSettings(relays: [relay.url], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30)
        let window = WatchSettings.windowSeconds
        try await TestDatabase.with { url, database in
            try await Self.watchThenLeaveUnwatchedTenMinutes(
                bob, token: HTTP2DeliveryTests.token(0xBB), url: url, database: database, watch: settings)
            let shard = WatchShard.of(pubkey: bob.publicKey.hex, shards: 8)
            let stopped = Int64(
                try await TestDatabase.count(
                    database, "SELECT floor(extract(epoch FROM expires_at))::int FROM watch_shards WHERE shard = \(shard)"))
            let firstRun = relay.records.count
            try await GatewayHarness.run(url: url, database: database, watch: settings) { (gateway: GatewayHarness) async throws in
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                // Live counts from the marks read at the takeover, maybe before the REQ is out.
                #expect(try await GatewayHarness.eventually { !relay.records.dropFirst(firstRun).flatMap(\.giftWrapSinces).isEmpty })
                let taken = relay.records.dropFirst(firstRun).flatMap(\.giftWrapSinces)
                #expect(!taken.isEmpty && taken.allSatisfy { $0 == stopped - 60 - window }, "\(taken), stopped at \(stopped)")
                // Caught up: the shard's moment is cleared with the next heartbeat.
                #expect(
                    try await GatewayHarness.eventually {
                        try await gateway.count("SELECT count(*)::int FROM watch_shards WHERE resume_from IS NOT NULL") == 0
                    }, "nothing left to catch up")

                let beforeLoss = UnixTime.now()
                let secondRun = relay.records.count
                await relay.dropConnections()
                #expect(
                    try await GatewayHarness.eventually { relay.records.dropFirst(secondRun).contains { $0.requests > 0 } },
                    "the watcher came back and asked again")
                let resumed = relay.records.dropFirst(secondRun).flatMap(\.giftWrapSinces)
                #expect(
                    !resumed.isEmpty && resumed.allSatisfy { since in since.map { $0 >= beforeLoss - 120 - window } ?? false },
                    "from the loss, not the takeover: \(resumed), lost after \(beforeLoss)")
            }
        }
        await relay.stop()
    }

    /// The same new wrap reaches a relay whose subscription for the recipient is fresh (it comes
    /// back as stored history) before another relay, where the recipient is already live,
    /// forwards it in real time: it is pushed once, not lost as "history".
    @Test func aWrapOneRelayReturnedAsHistoryIsPushedWhenAnotherForwardsItLive() async throws {
        let fast = try RelayFixture(), slow = try RelayFixture()
        try await fast.start()
        try await slow.start()
        let bob = Keys.generate()
        let wrap = try Self.storedWrap(to: bob, "new")
        // Already stored on the slower relay when the gateway's REQ for bob first reaches it.
        try await Self.publish([wrap], to: slow)
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([fast, slow])) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xB9))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                #expect(
                    try await GatewayHarness.eventually {
                        try await gateway.count(
                            "SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(wrap.id.hex)' AND history_until IS NOT NULL") == 1
                    }, "claimed as the slow relay's history first")
                #expect(Self.giftWrapDeliveries(sandbox).isEmpty)
                try await Self.publish([wrap], to: fast)
                #expect(try await GatewayHarness.eventually { Self.giftWrapDeliveries(sandbox).count == 1 }, "pushed on the real-time copy")
                #expect(try JSONValue(parsing: try #require(Self.giftWrapDeliveries(sandbox).first).payload)["relay"] == .string(fast.url))
                try await Task.sleep(for: .milliseconds(500))
                #expect(Self.giftWrapDeliveries(sandbox).count == 1, "once")
                #expect(
                    try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE history_until IS NOT NULL") == 0,
                    "the claim is the push's now")
            }
        }
    }

    /// A live mark written late (it waited in the queue, or came from an instance that has
    /// since lost the shard) never brings back a pubkey nothing watches, and a row a lost forget
    /// left behind is swept by the maintenance prune.
    @Test func liveMarksOnlyStickForWatchedPubkeys() async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30)) {
            gateway in
            let bob = Keys.generate(), carol = Keys.generate(), erased = Keys.generate()
            try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE1))
            try await Self.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xE2), watch: false)
            let store = WatchStore(client: gateway.database, settings: gateway.configuration.watch, logger: TestDatabase.logger)
            let pubkeys = [bob, carol, erased].map(\.publicKey.hex)
            try await store.markLive(pubkeys, relay: "wss://a")
            #expect(
                try await store.livePubkeys(pubkeys, relay: "wss://a") == [bob.publicKey.hex],
                "carol gets typed pushes only and the erased account has no device: neither is marked")

            // A row no forget removed (inserted behind the store's back, as a lost forget leaves it).
            _ = try await gateway.count(
                """
                WITH i AS (INSERT INTO watch_live (pubkey, relay) VALUES ('\(erased.publicKey.hex)', 'wss://a') RETURNING 1) SELECT count(*)::int FROM i
                """)
            let gatewayStore = GatewayStore(client: gateway.database, logger: TestDatabase.logger)
            #expect(try await gatewayStore.prune() >= 1)
            #expect(try await store.livePubkeys(pubkeys, relay: "wss://a") == [bob.publicKey.hex], "swept; bob's row stays")
        }
    }

    /// What may take over a history claim, on the store: only a real-time sighting, only within
    /// `historyRaceSeconds`, and only once; a resumed replay or a stale claim never does.
    @Test func aHistoryClaimGivesWayOnlyToARealtimeSightingSoonAfter() async throws {
        try await Self.withWatchingStore(token: 0xBA) { gateway, bob, store in
            func sight(_ wrap: String, _ phase: WrapSighting.Phase, relay: String = "wss://a") async throws -> WatchStore.RecordResult {
                try await store.record([WrapSighting(wrapID: wrap, recipient: bob.publicKey.hex, relay: relay, phase: phase)])
            }
            let fresh = String(repeating: "a1", count: 32), stale = String(repeating: "b2", count: 32),
                replayed = String(repeating: "c3", count: 32)
            for wrap in [fresh, stale, replayed] {
                let history = try await sight(wrap, .history, relay: "wss://slow")
                #expect(history.claimed == 1 && history.jobs == 0, "history only claims")
            }
            _ = try await gateway.count(
                "WITH u AS (UPDATE seen_wraps SET history_until = now() - interval '1 second' WHERE wrap_id = '\(stale)' RETURNING 1) SELECT count(*)::int FROM u"
            )

            let resumed = try await sight(replayed, .resumed)
            #expect(resumed.claimed == 0 && resumed.jobs == 0, "a replay after a reconnect is not news")
            let late = try await sight(stale, .realtime)
            #expect(late.claimed == 0 && late.jobs == 0, "a history claim past the race window stands")
            let taken = try await sight(fresh, .realtime)
            #expect(taken.claimed == 1 && taken.jobs == 1, "the real-time copy of a wrap just seen as history is pushed")
            let again = try await sight(fresh, .realtime, relay: "wss://c")
            #expect(again.claimed == 0 && again.jobs == 0, "and only once")
            #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 1)
        }
    }

    /// A history claim that another statement commits while a real-time sighting of the same
    /// wrap is being recorded still gives way: the real-time statement waits for the history
    /// row, then takes it over. An UPDATE under the real-time statement's snapshot cannot see a
    /// row committed after it began, and the wrap went unpushed by both.
    @Test func aHistoryClaimCommittedDuringARealtimeSightingStillGivesWay() async throws {
        try await Self.withWatchingStore(token: 0xBB) { gateway, bob, store in
            let wrap = String(repeating: "d4", count: 32)
            try await gateway.database.withConnection { history in
                _ = try await history.query("BEGIN", logger: TestDatabase.logger)
                _ = try await history.query(
                    "INSERT INTO seen_wraps (wrap_id, history_until) VALUES (\(wrap), now() + interval '30 seconds')",
                    logger: TestDatabase.logger)
                let realtime = Task {
                    try await store.record([WrapSighting(wrapID: wrap, recipient: bob.publicKey.hex, relay: "wss://b", phase: .realtime)])
                }
                let waiting = await TestSupport.eventually(within: 10) {
                    (try? await gateway.count(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")) == 1
                }
                #expect(waiting, "the real-time statement waits for the uncommitted history row")
                _ = try await history.query("COMMIT", logger: TestDatabase.logger)
                let taken = try await realtime.value
                #expect(taken.claimed == 1 && taken.jobs == 1, "the real-time copy is pushed")
            }
            #expect(
                try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(wrap)' AND history_until IS NULL") == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_jobs") == 1)
        }
    }

    /// A wrap's job queued already leased (direct delivery): due only when the lease ends, so
    /// the claim query's index scan stops before it, while the device's coalescing window still
    /// starts now, not at the lease's end.
    @Test func aLeasedWatchJobIsDueAtItsLeaseEndAndCoalescesFromNow() async throws {
        try await GatewayHarness.run(watch: WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 5, shards: 8, leaseSeconds: 30)) {
            gateway in
            let bob = Keys.generate()
            try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xBB))
            let store = WatchStore(client: gateway.database, settings: gateway.configuration.watch, logger: TestDatabase.logger)
            let first = try await store.record(
                [
                    WrapSighting(
                        wrapID: String(repeating: "d4", count: 32), recipient: bob.publicKey.hex,
                        relay: "wss://a", phase: .realtime)
                ], leaseSeconds: 60)
            #expect(first.jobs == 1 && first.leased.count == 1 && first.leased.first?.attempts == 1)
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_queue WHERE next_attempt_at = locked_until
                      AND next_attempt_at BETWEEN now() + interval '59 seconds' AND now() + interval '61 seconds'
                    """) == 1, "due at the lease's end")
            #expect(try await DeliveryQueue(client: gateway.database, logger: TestDatabase.logger).claim(limit: 10).isEmpty)
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM device_pacing WHERE next_at BETWEEN now() + interval '4 seconds' AND now() + interval '6 seconds'
                    """) == 1, "the coalescing window runs from now")

            let second = try await store.record(
                [
                    WrapSighting(
                        wrapID: String(repeating: "e5", count: 32), recipient: bob.publicKey.hex,
                        relay: "wss://a", phase: .realtime)
                ], leaseSeconds: 60)
            #expect(second.jobs == 1 && second.leased.isEmpty, "inside the window: queued for the window's end, not leased")
            #expect(
                try await gateway.count(
                    """
                    SELECT count(*)::int FROM push_jobs WHERE locked_until IS NULL AND attempts = 0
                      AND next_attempt_at BETWEEN now() + interval '4 seconds' AND now() + interval '6 seconds'
                    """) == 1)
        }
    }

    @Test func aBurstIsCoalescedIntoFewerPushesCarryingTheCount() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings([relay], coalesceSeconds: 10)) { gateway in
                try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xB9))
                #expect(try await Self.waitLive(gateway, pubkeys: 1))
                let wraps = try (0..<6).map { try Self.wrap(to: bob, "burst \($0)") }
                try await Self.publish(wraps, to: relay)
                let counts: @Sendable () -> [Int] = {
                    Self.giftWrapDeliveries(sandbox).compactMap { try? JSONValue(parsing: $0.payload)["count"]?.integerValue }.map {
                        Int($0)
                    }
                }
                #expect(try await GatewayHarness.eventually(within: 40) { counts().reduce(0, +) == 6 })
                // The first goes out at once, the rest wait for the 10-second window (long enough to
                // hold six publishes on a slow machine) and travel as one.
                #expect(counts().count <= 2, "pushes: \(counts())")
                #expect(counts().count >= 1)
                let last = try #require(Self.giftWrapDeliveries(sandbox).last)
                #expect(Set(wraps.map(\.id.hex)).contains(try JSONValue(parsing: last.payload)["wrap_id"]?.stringValue ?? ""))
            }
        }
    }

    @Test func typedPushesSkipRelayWatchDevicesWhileWatching() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate()
        try await GatewayHarness.run(watch: Self.settings([relay])) { gateway in
            try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0x71))
            try await Self.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0x72), watch: false)
            let response = try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob, carol]))
            #expect(response.status == .accepted)
            #expect(response.json?["candidate_devices"] == 1, "carol's device only: bob's gets the relay-watch push instead")
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_queue WHERE device_token = '\(HTTP2DeliveryTests.token(0x72))'")
                    == 1
            )
        }
        // Without RELAYS, a relay_watch device keeps typed pushes (nobody else would push it).
        try await GatewayHarness.run { gateway in
            try await Self.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0x73))
            let response = try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob]))
            #expect(response.json?["candidate_devices"] == 1)
        }
    }
}

/// The watcher's pure parts, as values.
@Suite struct RelayWatchValueTests {
    @Test func chunksKeepPlacementStableSoOneChangeTouchesOneChunk() {
        var chunks = WatchChunks(size: 3)
        let keys = (0..<7).map { "k\($0)" }
        #expect(chunks.apply(inserted: keys, removed: []) == [0, 1, 2])
        #expect(chunks.chunks.map(\.count) == [3, 3, 1])
        // Removing from a full chunk opens a slot there; the next pubkey fills it, nothing moves.
        #expect(chunks.remove("k1") == 0)
        #expect(chunks.insert("new") == 0)
        #expect(chunks.chunk(of: "new") == 0 && chunks.chunk(of: "k6") == 2)
        #expect(chunks.insert("new") == nil, "already watched")
        #expect(chunks.remove("absent") == nil)
        #expect(chunks.apply(inserted: ["a", "b"], removed: ["k3"]) == [1, 2])
        #expect(chunks.count == 8)
        #expect(chunks.chunks.allSatisfy { $0.count <= 3 })
    }

    @Test func shardOfAPubkeyMatchesTheSQLFunction() async throws {
        let pubkeys =
            (0..<50).map { _ in Keys.generate().publicKey.hex } + [String(repeating: "f", count: 64), String(repeating: "0", count: 64)]
        try await TestDatabase.with { _, database in
            for shards in [1, 7, 64, 4096] {
                var fromSQL: [Int] = []
                for try await shard in try await database.query(
                    "SELECT linkstr_watch_shard(p, \(shards)::int) FROM unnest(\(pubkeys)::text[]) WITH ORDINALITY AS t(p, n) ORDER BY n",
                    logger: TestDatabase.logger
                ).decode(Int.self) { fromSQL.append(shard) }
                #expect(fromSQL == pubkeys.map { WatchShard.of(pubkey: $0, shards: shards) })
            }
        }
    }

    @Test func settingsFromTheEnvironment() throws {
        let settings = try WatchSettings.fromEnvironment([
            "RELAYS": " wss://relay.damus.io , ws://127.0.0.1:7777,wss://relay.damus.io", "WATCH_CHUNK_SIZE": "100", "WATCH_SHARDS": "16",
        ])
        #expect(settings.relays == ["wss://relay.damus.io", "ws://127.0.0.1:7777"])
        #expect(
            settings.enabled && settings.chunkSize == 100 && settings.shards == 16 && settings.coalesceSeconds == 5
                && settings.leaseSeconds == 30)
        #expect(!(try WatchSettings.fromEnvironment([:])).enabled)
        for (key, value) in [
            ("RELAYS", "https://relay.example"), ("RELAYS", "ws://"), ("WATCH_CHUNK_SIZE", "0"), ("WATCH_SHARDS", "x"),
            ("GATEWAY_NSEC", "nsec1nope"), ("WATCH_COALESCE_SECONDS", "-1"),
        ] {
            #expect(throws: ConfigurationError.self, "\(key)=\(value)") { try WatchSettings.fromEnvironment([key: value]) }
            do { _ = try WatchSettings.fromEnvironment([key: value]) } catch { #expect(error.key == key) }
        }
        let key = Keys.generate()
        #expect(try WatchSettings.fromEnvironment(["GATEWAY_NSEC": key.secretKey.exportNsec()]).gatewayKey?.publicKey == key.publicKey)
    }

    @Test func relayLimitsAndResubscriptionFromTheEnvironment() throws {
        let defaults = try WatchSettings.fromEnvironment(["RELAYS": "ws://127.0.0.1:7777"])
        #expect(defaults.relayMaxEventsPerSecond == 20_000 && defaults.relayMaxInvalid == 100 && defaults.resubscribeSeconds == 2)
        #expect(defaults.relayLimits == RelayLimits(maxEventsPerSecond: 20_000, maxInvalid: 100))
        // The benchmark streams 5,000 wraps/s from one relay: the default flood limit must not bind.
        #expect(defaults.relayMaxEventsPerSecond >= 4 * 5_000)
        let set = try WatchSettings.fromEnvironment([
            "WATCH_RELAY_MAX_EVENTS_PER_SECOND": "0", "WATCH_RELAY_MAX_INVALID": "7", "WATCH_RESUBSCRIBE_SECONDS": "0",
        ])
        #expect(set.relayLimits == RelayLimits(maxEventsPerSecond: nil, maxInvalid: 7), "0 turns a limit off")
        #expect(set.resubscribeSeconds == 0)
        for (key, value, meaning) in [
            (
                "WATCH_RELAY_MAX_EVENTS_PER_SECOND", "-5",
                "messages a relay may send per second, averaged over 10 s (0: no limit): an integer in 0...1000000"
            ),
            ("WATCH_RELAY_MAX_INVALID", "many", "invalid events a relay may send within a minute (0: no limit): an integer in 0...1000000"),
            ("WATCH_RESUBSCRIBE_SECONDS", "61", "seconds between two REQs for one subscription chunk (0: at once): an integer in 0...60"),
        ] {
            do {
                _ = try WatchSettings.fromEnvironment([key: value])
                Issue.record("\(key)=\(value) was accepted")
            } catch {
                #expect(error.key == key)
                #expect(error.problem == meaning)
            }
        }
    }

    @Test func theGiftWrapPayloadStaysGenericAndSmall() throws {
        let recipient = Keys.generate().publicKey.hex
        let notification = APNsNotification.giftWrap(
            wrapID: String(repeating: "a", count: 64), relay: "wss://relay.example", count: 3, recipient: recipient)
        #expect(notification.collapseID == recipient)
        let payload = try JSONValue(parsing: notification.payload)
        #expect(payload["aps"]?["alert"]?["body"] == "New activity")
        #expect(payload["count"] == 3)
        // An absurd relay URL is left out instead of breaking Apple's 4096-byte limit.
        let huge = APNsNotification.giftWrap(
            wrapID: "x", relay: "wss://" + String(repeating: "r", count: 5000), count: 1, recipient: recipient)
        #expect(huge.payload.utf8.count <= APNsNotification.maxPayloadBytes)
        #expect((try JSONValue(parsing: huge.payload))["relay"] == nil)
        // `POST /v1/push` cannot ask for the watcher's type.
        #expect(throws: RequestBodyError.self) {
            try PushRequest.parse(
                Array(#"{"notification_type":"gift_wrap","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(recipient)"]}"#.utf8)
            )
        }
    }

    /// The payload is written straight out (it runs once per push); it must be byte for byte what
    /// the general serializer makes of the same fields, escaping included.
    static let payloadCases: [(relay: String, count: Int)] = [
        ("wss://relay.example", 1), ("ws://127.0.0.1:7777/a\"b\\c\n\u{01}é/", 12), (String(repeating: "r", count: 1024), 2),
        (String(repeating: "r", count: 1025), 3), ("", 1_000_000),
    ]

    @Test(arguments: payloadCases.indices)
    func theGiftWrapPayloadIsWhatTheSerializerWrites(payloadCase: Int) throws {
        let (relay, count) = Self.payloadCases[payloadCase]
        for wrapID in [String(repeating: "f", count: 64), "quote\" back\\slash \u{7f} \u{2028}"] {
            let notification = APNsNotification.giftWrap(
                wrapID: wrapID, relay: relay, count: count, recipient: String(repeating: "b", count: 64))
            var fields: [String: JSONValue] = [
                "aps": ["alert": ["title": "linkstr", "body": "New activity"], "sound": "default", "mutable-content": 1],
                "type": "gift_wrap", "wrap_id": .string(wrapID), "count": .integer(Int64(count)),
            ]
            if relay.utf8.count <= 1024 { fields["relay"] = .string(relay) }
            #expect(notification.payload == JSONValue.object(fields).serialized)
        }
    }

    /// The collapse id is the whole id when it fits (the usual 64 hex characters) and is cut on a
    /// character boundary at 64 bytes otherwise.
    @Test func theCollapseIDIsTheIDCutTo64Bytes() {
        let hex = String(repeating: "c", count: 64)
        #expect(APNsNotification.giftWrap(wrapID: "w", relay: "", count: 1, recipient: hex).collapseID == hex)
        #expect(APNsNotification(type: .newPost, eventID: hex + "d", conversationID: "c").collapseID == hex)
        // 21 three-byte characters are 63 bytes; the 22nd would pass 64 and is left out.
        #expect(
            APNsNotification(type: .newPost, eventID: String(repeating: "€", count: 30), conversationID: "c").collapseID
                == String(repeating: "€", count: 21))
        #expect(APNsNotification(type: .newPost, eventID: "", conversationID: "c").collapseID == "")
    }
}
