import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import NostrProtocol
import NostrRelay
import PushGateway
import TestSupport
import Testing

/// The gateway as an inbox relay (`INBOX_RELAY=1`), spoken to by the project's own relay client
/// over a real WebSocket, on a real PostgreSQL, pushes counted in the APNs sandbox.
@Suite(.serialized) struct InboxRelayTests {
    /// Runs a gateway whose inbox listens on a free loopback port; its relay URL (what AUTH must
    /// name) is `ws://127.0.0.1:<port>/relay`.
    static func withInbox(
        deliver: Bool = false, apns: APNsConfiguration? = nil, eventsPerSecond: Int = 10, connectionsPerAddress: Int = 20,
        rateLimits: RateLimitSettings = .disabled, watch: WatchSettings = WatchSettings(),
        _ body: @Sendable (GatewayHarness, String) async throws -> Void
    ) async throws {
        let port = try LoopbackPort.free()
        let publicURL = "http://127.0.0.1:\(port)"
        let relayURL = try RelayURL("ws://127.0.0.1:\(port)/relay")
        let settings = InboxRelaySettings(
            enabled: true, listenHost: "127.0.0.1", listenPort: port, relayURL: relayURL,
            maxConnectionsPerAddress: connectionsPerAddress, eventsPerSecond: eventsPerSecond)
        try await GatewayHarness.run(
            deliver: deliver, apns: apns, watch: watch, rateLimits: rateLimits, publicURL: publicURL, inbox: settings
        ) {
            gateway in
            // The inbox starts with the other services, once migrations are in.
            let ready = try await GatewayHarness.eventually {
                (try? RawHTTPClient.status(port: port, method: "GET", path: "/relay")) == 200
            }
            try #require(ready, "the inbox relay listens")
            try await body(gateway, relayURL.description)
        }
    }

    static func connection(_ url: String, keys: Keys? = nil) -> RelayConnection {
        var configuration = RelayConfiguration(authKeys: keys)
        configuration.publishTimeout = .seconds(10)
        return RelayConnection(url: url, configuration: configuration, logger: TestDatabase.logger)
    }

    /// Publishes `event` through a fresh connection and returns the relay's answer.
    static func publish(_ event: NostrEvent, to url: String) async throws -> PublishResult {
        let sender = connection(url)
        return try await sender.running { try await sender.publish(event) }
    }

    /// The items of `stream` up to and including the first `until` (EOSE or CLOSED), within 10 s.
    static func collect(
        _ stream: SubscriptionStream, until stop: @escaping @Sendable (SubscriptionEvent) -> Bool
    ) async -> [SubscriptionEvent] {
        await withTaskGroup(of: [SubscriptionEvent]?.self) { group in
            group.addTask {
                var items: [SubscriptionEvent] = []
                for await item in stream {
                    items.append(item)
                    if stop(item) { break }
                }
                return items
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
    }

    /// The inbox's open connections on this instance, from `/admin/status`.
    static func openConnections(_ gateway: GatewayHarness) async throws -> Int64? {
        let response = try await gateway.client.execute(
            uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
        return try JSONValue(parsing: Array(response.body.readableBytesView))["inbox"]?["connections"]?.integerValue
    }

    static func port(of url: String) throws -> Int {
        try #require(Int(url.split(separator: ":").last?.split(separator: "/").first ?? ""))
    }

    static func inboxFilter(_ recipient: Keys) -> Filter {
        Filter(kinds: [EventKind.giftWrap], tags: ["p": [recipient.publicKey.hex]])
    }

    @Test func aWrapToARegisteredPubkeyIsStoredOnceAndPushedOnce() async throws {
        try await SandboxFixture.with { sandbox in
            try await Self.withInbox(deliver: true, apns: sandbox.apns) { gateway, url in
                let bob = Keys.generate()
                try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD1))
                let wrap = try RelayWatchTests.wrap(to: bob)
                let sender = Self.connection(url)
                try await sender.running {
                    let first = try await sender.publish(wrap)
                    #expect(first.accepted, "\(first.message)")
                    let again = try await sender.publish(wrap)
                    #expect(again.accepted && again.message.hasPrefix("duplicate:"), "\(again.message)")
                }
                #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 1)
                #expect(try await GatewayHarness.eventually { RelayWatchTests.giftWrapDeliveries(sandbox).count == 1 })
                try await Task.sleep(for: .milliseconds(500))
                #expect(RelayWatchTests.giftWrapDeliveries(sandbox).count == 1, "one push for the wrap sent twice")
            }
        }
    }

    @Test func badEventsAreRefusedWithTheirReasonAndStoreNothing() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate(), stranger = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD2))
            let note = stranger.sign(kind: 1, tags: [["p", bob.publicKey.hex]], content: "hi")
            // Shaped like a wrap, dated four days back (the relay does not open wraps).
            let old = stranger.sign(
                kind: EventKind.giftWrap, tags: [["p", bob.publicKey.hex]], content: "x", createdAt: UnixTime.now() - 4 * 86_400)
            let toNobody = try RelayWatchTests.wrap(to: stranger)
            let sender = Self.connection(url)
            try await sender.running {
                for (event, prefix) in [(note, "restricted:"), (old, "invalid:"), (toNobody, "restricted:")] {
                    let result = try await sender.publish(event)
                    #expect(!result.accepted && result.message.hasPrefix(prefix), "kind \(event.kind): \(result.message)")
                }
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 0)
        }
    }

    @Test func onlyTheRecipientReadsStoredThenLiveWraps() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate(), mallory = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD3))
            let stored = try RelayWatchTests.wrap(to: bob, "stored")
            #expect(try await Self.publish(stored, to: url).accepted)

            // No AUTH: closed.
            let anonymous = Self.connection(url)
            let anonymousItems = try await anonymous.running {
                await Self.collect(anonymous.subscribe(id: "a", filters: [Self.inboxFilter(bob)])) { $0 != .endOfStoredEvents }
            }
            #expect(anonymousItems.contains { if case .closed(let text) = $0 { text.hasPrefix("auth-required:") } else { false } })

            // AUTH as another key: asking for bob's wraps is refused, nothing is read.
            let other = Self.connection(url, keys: mallory)
            let otherItems = try await other.running {
                await Self.collect(other.subscribe(id: "m", filters: [Self.inboxFilter(bob)])) { item in
                    if case .closed(let text) = item { !text.hasPrefix("auth-required:") } else { item == .endOfStoredEvents }
                }
            }
            #expect(!otherItems.contains { if case .event = $0 { true } else { false } }, "\(otherItems)")
            #expect(otherItems.contains { if case .closed(let text) = $0 { text.hasPrefix("restricted:") } else { false } })

            // AUTH as bob: the stored wrap, EOSE, then one published now.
            let reader = Self.connection(url, keys: bob)
            try await reader.running {
                let stream = await reader.subscribe(id: "b", filters: [Self.inboxFilter(bob)])
                let history = await Self.collect(stream) { $0 == .endOfStoredEvents }
                #expect(history == [.event(stored), .endOfStoredEvents])
                let live = try RelayWatchTests.wrap(to: bob, "live")
                #expect(try await Self.publish(live, to: url).accepted)
                // A LISTEN connection lost under load is followed by a replay of what was stored
                // meanwhile, which may send the stored wrap again (a Nostr client ignores a repeat).
                let next = await Self.collect(stream) { if case .event(let event) = $0 { event.id != stored.id } else { false } }
                #expect(next.last == .event(live))
                #expect(next.dropLast().allSatisfy { $0 == .event(stored) }, "\(next)")
            }
        }
    }

    /// NOTIFY reaches only a listening connection: what was stored while the gateway's LISTEN
    /// connection was down is sent to the live subscribers once it listens again.
    @Test func wrapsStoredWhileListenWasDownReachLiveSubscribers() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD8))
            let reader = Self.connection(url, keys: bob)
            try await reader.running {
                let stream = await reader.subscribe(id: "b", filters: [Self.inboxFilter(bob)])
                #expect(await Self.collect(stream) { $0 == .endOfStoredEvents } == [.endOfStoredEvents])
                let listening = """
                    SELECT count(*)::int FROM pg_stat_activity
                    WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()
                    """
                try #require(try await GatewayHarness.eventually { try await gateway.count(listening) == 1 })
                let terminated = try await gateway.count(
                    """
                    SELECT count(*)::int FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()) AS t
                    """)
                #expect(terminated == 1)
                // Stored within the second before the gateway listens again: no NOTIFY reaches it.
                let meanwhile = try RelayWatchTests.wrap(to: bob, "meanwhile")
                #expect(try await Self.publish(meanwhile, to: url).accepted)
                let next = await Self.collect(stream) { if case .event = $0 { true } else { false } }
                #expect(next == [.event(meanwhile)])
            }
        }
    }

    @Test func vanishRetentionAndTheLastDeviceDeleteTheWraps() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate(), carol = Keys.generate()
            let bobToken = HTTP2DeliveryTests.token(0xD4)
            try await RelayWatchTests.registerWatching(gateway, bob, bobToken)
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xD5))
            let sender = Self.connection(url)
            // Signed once the wraps are stored: a request covers what was stored up to the end of
            // its `created_at` second, and storing them on a busy machine can take longer.
            let vanish = try await sender.running {
                for recipient in [bob, bob, carol] {
                    let result = try await sender.publish(try RelayWatchTests.wrap(to: recipient))
                    #expect(result.accepted)
                }
                // Carol asks this relay to forget her; a request naming another relay is refused.
                let elsewhere = carol.sign(kind: EventKind.requestToVanish, tags: [["relay", "wss://other.example"]], content: "")
                let refused = try await sender.publish(elsewhere)
                #expect(refused.accepted == false)
                #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 3)
                let vanish = carol.sign(kind: EventKind.requestToVanish, tags: [["relay", url]], content: "")
                let vanished = try await sender.publish(vanish)
                #expect(vanished.accepted)
                return vanish
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(carol.publicKey.hex)'") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 2)
            // The same request replayed later deletes nothing stored after it.
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await Self.publish(try RelayWatchTests.wrap(to: carol), to: url).accepted)
            #expect(try await Self.publish(vanish, to: url).accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(carol.publicKey.hex)'") == 1)

            // Retention: nothing is due yet; fifteen days on, everything is.
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger)
            #expect(try await store.prune(retentionDays: 14) == 0)
            let unregister = #"{"device_token":"\#(bobToken)"}"#
            #expect(try await gateway.send(bob, .post, "/v1/devices/unregister", json: unregister).status == .accepted)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(bob.publicKey.hex)'") == 0,
                "bob's last device took his wraps")
            try await RelayWatchTests.registerWatching(gateway, bob, bobToken)
            #expect(try await Self.publish(try RelayWatchTests.wrap(to: bob), to: url).accepted)
            // Bob's new wrap and carol's are both past the retention then.
            #expect(try await store.prune(retentionDays: 14, now: Date().addingTimeInterval(15 * 86_400)) == 2)

            // Deleting the account takes the wraps too.
            #expect(try await Self.publish(try RelayWatchTests.wrap(to: carol), to: url).accepted)
            let carols = "SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(carol.publicKey.hex)'"
            #expect(try await gateway.count(carols) == 1)
            #expect(try await gateway.send(carol, .delete, "/v1/account").status == .ok)
            #expect(try await gateway.count(carols) == 0, "carol's account took her wraps")

            // What the inbox did is in the metrics.
            let metrics = String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"linkstr_inbox_events_total{outcome="stored"}"#), "\(metrics.count) bytes of metrics")
            #expect(metrics.contains("linkstr_inbox_connections "))
        }
    }

    /// The same wrap sent to the inbox relay and seen on a watched relay is pushed once.
    @Test func aWrapOnTheInboxAndOnAWatchedRelayIsPushedOnce() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await SandboxFixture.with { sandbox in
            try await Self.withInbox(deliver: true, apns: sandbox.apns, watch: RelayWatchTests.settings([relay])) { gateway, url in
                let bob = Keys.generate()
                try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xDD))
                #expect(try await RelayWatchTests.waitLive(gateway, pubkeys: 1, within: 30))
                let wrap = try RelayWatchTests.wrap(to: bob)
                #expect(try await Self.publish(wrap, to: url).accepted)
                try await RelayWatchTests.publish([wrap], to: relay)
                #expect(try await GatewayHarness.eventually { RelayWatchTests.giftWrapDeliveries(sandbox).count == 1 })
                try await Task.sleep(for: .seconds(1))
                #expect(RelayWatchTests.giftWrapDeliveries(sandbox).count == 1, "one push for both sightings")
                #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps WHERE wrap_id = '\(wrap.id.hex)'") == 1)
            }
        }
    }

    /// rust-nostr's own client publishes a wrap rust-nostr made, and reads it back only as the
    /// recipient, answering the relay's AUTH on its own.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func rustNostrPublishesAuthenticatesAndReads() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate(), alice = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD6))
            let wrapJSON = try await RustNostrPeer.call(
                "gift_wrap",
                [
                    "sender_secret_key": .string(alice.secretKey.exportHex()), "receiver_pubkey": .string(bob.publicKey.hex),
                    "rumor": ["created_at": .integer(UnixTime.now()), "kind": 14, "tags": .tags([]), "content": "hi"],
                ])
            let wrap = try NostrEvent(json: try #require(wrapJSON.stringValue))
            let answer = try await RustNostrPeer.script(
                "rust_nostr_inbox_client.py", [url, wrap.json, bob.secretKey.exportHex()])
            #expect(answer["sent"] == true, "\(answer["send_error"] ?? .null)")
            #expect(answer["anonymous"] == [], "a client without the key reads nothing")
            #expect(answer["recipient"] == [.string(wrap.id.hex)])
        }
    }

    /// A recipient's inbox holds at most so many wraps; a copy of one it holds is still a duplicate.
    @Test func aFullInboxRefusesMoreWraps() async throws {
        try await Self.withInbox { gateway, _ in
            let bob = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD7))
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger, maxWrapsPerRecipient: 2)
            let first = try RelayWatchTests.wrap(to: bob), second = try RelayWatchTests.wrap(to: bob)
            #expect(try await store.store(first, recipient: bob.publicKey.hex) == .stored)
            #expect(try await store.store(second, recipient: bob.publicKey.hex) == .stored)
            #expect(try await store.store(try RelayWatchTests.wrap(to: bob), recipient: bob.publicKey.hex) == .full)
            #expect(try await store.store(first, recipient: bob.publicKey.hex) == .duplicate)
            #expect(try await store.store(first, recipient: Keys.generate().publicKey.hex) == .unregistered)
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 2)
        }
    }

    /// A recipient's inbox holds at most so many bytes, whatever the count: a few large wraps fill
    /// it, and another recipient's inbox is untouched by it.
    @Test func anInboxFullInBytesRefusesMoreWraps() async throws {
        try await Self.withInbox { gateway, _ in
            let bob = Keys.generate(), carol = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD8))
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xD9))
            let large = String(repeating: "x", count: 20_000)
            let first = try RelayWatchTests.wrap(to: bob, from: Keys.generate(), large)
            let store = InboxStore(
                database: Database(gateway.database), logger: TestDatabase.logger, maxWrapsPerRecipient: 100,
                maxBytesPerRecipient: first.json.utf8.count * 3 / 2)
            #expect(try await store.store(first, recipient: bob.publicKey.hex) == .stored)
            #expect(
                try await store.store(try RelayWatchTests.wrap(to: bob, from: Keys.generate(), large), recipient: bob.publicKey.hex)
                    == .stored)
            let refused = try RelayWatchTests.wrap(to: bob, from: Keys.generate(), "small")
            #expect(try await store.store(refused, recipient: bob.publicKey.hex) == .full, "two large wraps are past the bytes allowed")
            #expect(try await store.store(first, recipient: bob.publicKey.hex) == .duplicate)
            #expect(try await store.store(try RelayWatchTests.wrap(to: carol), recipient: carol.publicKey.hex) == .stored)
            let bobs = "SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(bob.publicKey.hex)'"
            #expect(try await gateway.count(bobs) == 2)
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps WHERE id = '\(refused.id.hex)'") == 0)
        }
    }

    /// Behind a trusted proxy every client comes from the proxy's address: the limit counts the
    /// address the proxy forwards instead.
    @Test func connectionsPerAddressCountTheForwardedAddressBehindATrustedProxy() async throws {
        try await Self.withInbox(connectionsPerAddress: 1, rateLimits: RateLimitSettings(trustForwardedFor: true)) { gateway, url in
            let port = try Self.port(of: url)
            let first = try RawHTTPClient(port: port)
            #expect(try first.upgradeToWebSocket(port: port, path: "/relay", headers: ["X-Forwarded-For": "203.0.113.7"]) == 101)
            #expect(try await GatewayHarness.eventually { try await Self.openConnections(gateway) == 1 })

            // The same forwarded address again: refused, told why, closed.
            let second = try RawHTTPClient(port: port)
            #expect(try second.upgradeToWebSocket(port: port, path: "/relay", headers: ["X-Forwarded-For": "203.0.113.7"]) == 101)
            let refused = Locked<[UInt8]>([])
            let closed = try await GatewayHarness.eventually {
                let (closed, received) = second.drain()
                refused.withLock { $0 += received }
                return closed
            }
            #expect(closed)
            #expect(
                String(decoding: refused.withLock { $0 }, as: UTF8.self).contains("rate-limited: too many connections from your address"))

            // Another forwarded address through the same proxy: served.
            let third = try RawHTTPClient(port: port)
            #expect(
                try third.upgradeToWebSocket(port: port, path: "/relay", headers: ["X-Forwarded-For": "198.51.100.1, 203.0.113.8"]) == 101)
            #expect(try await GatewayHarness.eventually { try await Self.openConnections(gateway) == 2 })
            #expect(!String(decoding: third.drain().received, as: UTF8.self).contains("rate-limited"))
            withExtendedLifetime(first) {}
        }
    }

    /// A client that sends and never reads fills what the relay queues for it, and is cut off,
    /// whatever the relay's writes to it are waiting for.
    @Test func aClientThatStopsReadingIsDisconnected() async throws {
        try await Self.withInbox(eventsPerSecond: 100_000) { gateway, url in
            let port = try Self.port(of: url)
            // A small receive window, so that the kernel holds little of what it does not read.
            let client = try RawHTTPClient(port: port, receiveBuffer: 4096)
            #expect(try client.upgradeToWebSocket(port: port, path: "/relay") == 101)
            #expect(try await GatewayHarness.eventually { try await Self.openConnections(gateway) == 1 })
            // Each REQ before AUTH is answered CLOSED: 100,000 answers, some 7 MB, none of them read (the
            // kernel alone holds a few MB of them).
            for _ in 0..<100 { try client.sendTextFrames(Array(repeating: #"["REQ","s",{"kinds":[1059]}]"#, count: 1_000)) }
            #expect(try await GatewayHarness.eventually(within: 20) { try await Self.openConnections(gateway) == 0 })
            #expect(try await GatewayHarness.eventually { client.drain().closed })
        }
    }

    /// A connection holds at most 10 subscriptions: the eleventh is CLOSED and told why.
    @Test func anEleventhSubscriptionIsClosedWithTheReason() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xDB))
            let reader = Self.connection(url, keys: bob)
            try await reader.running {
                for index in 0..<10 {
                    let stream = await reader.subscribe(id: "s\(index)", filters: [Self.inboxFilter(bob)])
                    let history = await Self.collect(stream) { $0 == .endOfStoredEvents }
                    #expect(history == [.endOfStoredEvents], "subscription \(index)")
                }
                let eleventh = await reader.subscribe(id: "s10", filters: [Self.inboxFilter(bob)])
                let items = await Self.collect(eleventh) { if case .closed = $0 { true } else { $0 == .endOfStoredEvents } }
                #expect(items == [.closed("rate-limited: at most 10 subscriptions per connection")], "\(items)")
            }
        }
    }

    /// A message larger than the largest event allowed ends the connection and stores nothing.
    @Test func aMessageOverTheSizeLimitEndsTheConnection() async throws {
        try await Self.withInbox { gateway, url in
            let port = try Self.port(of: url)
            let client = try RawHTTPClient(port: port)
            #expect(try client.upgradeToWebSocket(port: port, path: "/relay") == 101)
            #expect(try await GatewayHarness.eventually { try await Self.openConnections(gateway) == 1 })
            let oversized = #"["EVENT",{"content":""# + String(repeating: "x", count: InboxRelaySettings.maxMessageBytes) + #""}]"#
            try client.sendTextFrames([oversized])
            #expect(try await GatewayHarness.eventually { client.drain().closed }, "a message over the limit ends the connection")
            #expect(try await GatewayHarness.eventually { try await Self.openConnections(gateway) == 0 })
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 0)
        }
    }

    /// EVENTs are limited per connection (INBOX_EVENTS_PER_SECOND, bursts of twice that) and per
    /// address (twice as many, bursts of four times): more connections from one address do not
    /// buy more room. What is refused is told `rate-limited:` and stores nothing.
    @Test func eventsAreLimitedPerConnectionAndPerAddress() async throws {
        try await Self.withInbox(eventsPerSecond: 5) { gateway, url in
            let bob = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xDC))
            @Sendable func burst(_ count: Int) async throws -> [PublishResult] {
                let wraps = try (0..<count).map { _ in try RelayWatchTests.wrap(to: bob) }
                let sender = Self.connection(url)
                return try await sender.running {
                    try await withThrowingTaskGroup(of: PublishResult.self) { group in
                        for wrap in wraps { group.addTask { try await sender.publish(wrap) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                }
            }
            // One connection: its burst of 10 goes through, the rest is refused.
            let began = ContinuousClock.now
            let first = try await burst(15)
            let firstAccepted = first.filter(\.accepted).count
            #expect((10...12).contains(firstAccepted), "\(first.map(\.message))")
            #expect(first.filter { !$0.accepted }.allSatisfy { $0.message == "rate-limited: slow down" })

            // Two more connections from the same address, each within its own burst: the address
            // has about 10 of its 20 left.
            async let second = burst(10)
            async let third = burst(10)
            let more = try await second + third
            let moreAccepted = more.filter(\.accepted).count
            // The address holds a burst of 20 and refills 10 a second: a slow machine refills
            // more between the bursts, so the bound is what it had room for in the time taken.
            let elapsed = (ContinuousClock.now - began) / .seconds(1)
            let addressRoom = 20 + Int((10 * elapsed).rounded(.up))
            #expect(firstAccepted + moreAccepted <= addressRoom, "\(elapsed) s: \(more.map(\.message))")
            #expect(more.count - moreAccepted >= 20 - (addressRoom - firstAccepted), "\(elapsed) s: \(more.map(\.message))")
            #expect(more.filter { !$0.accepted }.allSatisfy { $0.message == "rate-limited: slow down" })
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == firstAccepted + moreAccepted)
        }
    }

    /// The store loops write a batch per statement: each wrap gets its own outcome, in order.
    @Test func aBatchGivesEachWrapItsOwnOutcomeInOrder() async throws {
        try await Self.withInbox { gateway, _ in
            let bob = Keys.generate(), carol = Keys.generate(), stranger = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD9))
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xDA))
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger, maxWrapsPerRecipient: 1)
            let earlier = try RelayWatchTests.wrap(to: bob)
            #expect(try await store.store(earlier, recipient: bob.publicKey.hex) == .stored)
            let toCarol = try RelayWatchTests.wrap(to: carol), toStranger = try RelayWatchTests.wrap(to: stranger)
            let moreForBob = try RelayWatchTests.wrap(to: bob)
            let outcomes = try await store.store(
                [
                    (toCarol, carol.publicKey.hex), (toStranger, stranger.publicKey.hex), (earlier, bob.publicKey.hex),
                    (moreForBob, bob.publicKey.hex), (toCarol, carol.publicKey.hex),
                ], pushing: nil
            ).outcomes
            #expect(outcomes == [.stored, .unregistered, .duplicate, .full, .stored])
            #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps") == 2)
            #expect(try await store.store([], pushing: nil).outcomes.isEmpty)
        }
    }

    /// Storing a batch queues the pushes for what it stored now, in the same statement: each new
    /// wrap claimed once, a job per relay-watch device (leased when asked), nothing for a wrap
    /// refused or stored before.
    @Test func aBatchQueuesThePushesForTheWrapsItStoredNow() async throws {
        try await Self.withInbox { gateway, _ in
            let bob = Keys.generate(), carol = Keys.generate(), stranger = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE1))
            try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xE2))
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger)
            let earlier = try RelayWatchTests.wrap(to: bob)
            #expect(try await store.store(earlier, recipient: bob.publicKey.hex) == .stored)
            #expect(try await gateway.count("SELECT count(*)::int FROM seen_wraps") == 0, "stored without pushing: nothing claimed")
            let toBob = try RelayWatchTests.wrap(to: bob), toCarol = try RelayWatchTests.wrap(to: carol)
            let pushing = StoreInboxWrapsStatement.Pushing(
                relay: "ws://inbox.test/relay", coalesceSeconds: 60, lifetimeSeconds: 3600, leaseSeconds: 30, budget: .default)
            let result = try await store.store(
                [
                    (toBob, bob.publicKey.hex), (try RelayWatchTests.wrap(to: stranger), stranger.publicKey.hex),
                    (earlier, bob.publicKey.hex), (toCarol, carol.publicKey.hex), (toBob, bob.publicKey.hex),
                ], pushing: pushing)
            #expect(result.outcomes == [.stored, .unregistered, .duplicate, .stored, .stored])
            #expect(result.record.claimed == 2, "the two wraps stored now, each once")
            #expect(result.record.jobs == 2 && result.record.merged == 0 && result.record.overBudget == 0)
            #expect(Set(result.record.leased.map(\.pubkey)) == [bob.publicKey.hex, carol.publicKey.hex])
            #expect(result.record.leased.allSatisfy { $0.attempts == 1 })
            let claimed = try await TestDatabase.rows(gateway.database, "SELECT wrap_id FROM seen_wraps ORDER BY wrap_id")
            #expect(claimed == [toBob.id.hex, toCarol.id.hex].sorted().map { #"{"wrap_id":"\#($0)"}"# })
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM push_queue WHERE relay = 'ws://inbox.test/relay' AND locked_until IS NOT NULL") == 2)
        }
    }

    /// One notification carries up to 60 stored wraps: every one of a batch bigger than that
    /// reaches the recipient's live subscription.
    @Test func everyWrapOfABigBatchReachesTheLiveSubscriber() async throws {
        try await Self.withInbox { gateway, url in
            let bob = Keys.generate()
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xE3))
            let store = InboxStore(database: Database(gateway.database), logger: TestDatabase.logger)
            let reader = Self.connection(url, keys: bob)
            try await reader.running {
                let stream = await reader.subscribe(id: "b", filters: [Self.inboxFilter(bob)])
                #expect(await Self.collect(stream) { $0 == .endOfStoredEvents } == [.endOfStoredEvents])
                let wraps = try (0..<130).map { _ in try RelayWatchTests.wrap(to: bob) }
                let outcomes = try await store.store(wraps.map { ($0, bob.publicKey.hex) }, pushing: nil).outcomes
                #expect(outcomes == Array(repeating: .stored, count: 130))
                let events = Locked(0)
                let items = await Self.collect(stream) { item in
                    guard case .event = item else { return false }
                    return events.withLock { count in
                        count += 1
                        return count == wraps.count
                    }
                }
                let received = items.compactMap { item in if case .event(let event) = item { event.id.hex } else { nil } }
                #expect(Set(received) == Set(wraps.map(\.id.hex)), "\(items.count) items")
            }
        }
    }

    @Test func nip11DescribesTheInbox() async throws {
        try await Self.withInbox { _, url in
            let port = try Self.port(of: url)
            let client = try RawHTTPClient(port: port)
            try client.write("GET /relay HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/nostr+json\r\nConnection: close\r\n\r\n")
            let response = String(decoding: try client.readToEnd(), as: UTF8.self)
            #expect(response.hasPrefix("HTTP/1.1 200"))
            let body = try #require(response.range(of: "\r\n\r\n").map { String(response[$0.upperBound...]) })
            let information = try JSONValue(parsing: Array(body.utf8))
            #expect(information["supported_nips"]?.arrayValue?.contains(42) == true)
            #expect(information["limitation"]?["restricted_writes"] == true)
        }
    }
}
