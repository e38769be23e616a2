import Foundation
import Logging
import NostrProtocol
import NostrRelay
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// `RelayConnection` against a real relay (`nostr-relay` from PyPI) on loopback.
@Suite(.serialized) struct RelayConnectionTests {
    static let logger: Logger = {
        var logger = Logger(label: "relay-test")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()

    static func configuration() -> RelayConfiguration {
        var configuration = RelayConfiguration()
        configuration.backoff = RelayBackoff(base: .milliseconds(100), cap: .milliseconds(400), jitter: 0.1)
        // The Python relay can take seconds to answer on a loaded machine.
        configuration.publishTimeout = .seconds(20)
        return configuration
    }

    static func waitFor(_ connection: RelayConnection, _ wanted: RelayState, seconds: Double = 30) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await connection.state == wanted { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Next item of a subscription, or nil after `seconds`.
    static func next(_ iterator: inout SubscriptionStream.AsyncIterator, seconds: Double = 30) async -> SubscriptionEvent? {
        nonisolated(unsafe) var it = iterator
        defer { iterator = it }
        return await withTaskGroup(of: SubscriptionEvent?.self) { group in
            group.addTask { await it.next() }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    static func note(_ keys: Keys, _ content: String) -> NostrEvent {
        UnsignedEvent(pubkey: keys.publicKey, createdAt: UnixTime.now(), kind: 1, tags: [], content: content).signed(by: keys)
    }

    @Test func backoffGrowsToItsCapWithJitter() {
        let backoff = RelayBackoff(base: .milliseconds(500), cap: .seconds(60), jitter: 0.25)
        #expect(backoff.delay(afterFailures: 1, random: 0) == .milliseconds(500))
        #expect(backoff.delay(afterFailures: 2, random: 0) == .seconds(1))
        #expect(backoff.delay(afterFailures: 5, random: 0) == .seconds(8))
        #expect(backoff.delay(afterFailures: 20, random: 0) == .seconds(60))
        #expect(backoff.delay(afterFailures: 20, random: 0.999) <= .seconds(75))
        #expect(backoff.delay(afterFailures: 1, random: 0.5) == .milliseconds(562))
    }

    @Test func publishesAndSeparatesHistoryFromLiveEvents() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let connection = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: Self.logger)
        let keys = Keys.generate()
        try await connection.running {
            // Connected first: a publish waiting while the first attempt fails (a relay still
            // booting its worker on a loaded machine) rightly fails with `.disconnected`.
            #expect(await Self.waitFor(connection, .connected))
            let stored = Self.note(keys, "stored before the subscription")
            let ok = try await connection.publish(stored)
            #expect(ok.accepted && ok.eventID == stored.id)

            var events = await connection.subscribe(id: "s1", filters: [Filter(authors: [keys.publicKey], kinds: [1])]).makeAsyncIterator()
            #expect(await Self.next(&events) == .event(stored), "history first")
            #expect(await Self.next(&events) == .endOfStoredEvents)
            let live = Self.note(keys, "live")
            #expect(try await connection.publish(live).accepted)
            #expect(await Self.next(&events) == .event(live), "then live events")

            // A duplicate is answered with OK true and the machine-readable `duplicate:` prefix.
            let again = try await connection.publish(live)
            #expect(again.prefix == .duplicate || again.accepted)

            let statistics = await connection.statistics
            #expect(statistics.connections == 1 && statistics.events >= 2)
        }

        // An event with a broken signature is refused. This relay answers `["OK","",false,…]`
        // without the event id, which cannot be matched to the publish, so it ends in a timeout
        // (a short one, on a connection of its own).
        var quick = Self.configuration()
        quick.publishTimeout = .seconds(3)
        let other = RelayConnection(url: relay.url, configuration: quick, logger: Self.logger)
        try await other.running {
            #expect(await Self.waitFor(other, .connected, seconds: 30))
            var forged = Self.note(keys, "forged")
            forged = NostrEvent(
                id: forged.id, pubkey: forged.pubkey, createdAt: forged.createdAt, kind: forged.kind, tags: forged.tags,
                content: forged.content, sig: Self.note(keys, "other").sig)
            do {
                let refused = try await other.publish(forged)
                #expect(!refused.accepted && !refused.message.isEmpty)
            } catch let error as RelayError {
                #expect(error == .timeout)
            }
        }
    }

    @Test func reconnectsAfterTheRelayDiesAndResubscribes() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let connection = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: Self.logger)
        let keys = Keys.generate()
        try await connection.running {
            var events = await connection.subscribe(id: "watch", filters: [Filter(authors: [keys.publicKey], kinds: [1])])
                .makeAsyncIterator()
            #expect(await Self.next(&events) == .endOfStoredEvents)
            relay.kill()
            #expect(!LoopbackPort.accepts(relay.port), "the relay is down")
            var down = false
            for _ in 0..<250 where !down {
                down = await connection.state != .connected
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(down, "noticed the relay going away")
            try await relay.start()
            #expect(await Self.waitFor(connection, .connected), "reconnected after the relay came back")
            #expect(await Self.next(&events) == .endOfStoredEvents, "the REQ was sent again on the new connection")
            let live = Self.note(keys, "after the restart")
            #expect(try await connection.publish(live).accepted)
            #expect(await Self.next(&events) == .event(live))
            #expect(await connection.statistics.connections == 2)
        }
    }

    /// A REQ re-sent after a reconnect reaches back over the time the connection was down: an
    /// event published meanwhile, dated back further than `now − window` at the reconnect, still
    /// arrives (gift wraps are dated up to two days back, so a window that slid forward by the
    /// downtime would skip some of them).
    @Test func aResentREQReachesBackOverTheDowntime() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        var configuration = Self.configuration()
        // Slow to come back, so the event below is stored before the REQ is sent again.
        configuration.backoff = RelayBackoff(base: .seconds(3), cap: .seconds(3), jitter: 0)
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: Self.logger)
        let publisher = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: Self.logger)
        let keys = Keys.generate()
        let window: Int64 = 10
        let contexts = Mutex<[SubscriptionRequestContext]>([])
        try await connection.running {
            var events = await connection.subscribe(id: "window") { (context: SubscriptionRequestContext) in
                contexts.withLock { $0.append(context) }
                return [Filter(authors: [keys.publicKey], kinds: [1], since: context.since(window: window, now: UnixTime.now()))]
            }.makeAsyncIterator()
            #expect(await Self.next(&events) == .endOfStoredEvents)
            let lost = UnixTime.now()
            relay.kill()
            try await relay.start()
            // Dated 8 s before the loss: inside `lost − 10 s`, outside `reconnect − 10 s` since
            // the reconnect comes at least 3 s after the loss.
            let backdated = UnsignedEvent(pubkey: keys.publicKey, createdAt: lost - 8, kind: 1, tags: [], content: "while you were away")
                .signed(by: keys)
            let published = try await publisher.running { () async throws -> Bool in
                guard await Self.waitFor(publisher, .connected) else { return false }
                return try await publisher.publish(backdated).accepted
            }
            #expect(published, "stored while the subscriber was away")
            #expect(await Self.waitFor(connection, .connected, seconds: 15), "reconnected")
            var received: [SubscriptionEvent] = []
            while received.count < 2, let next = await Self.next(&events) { received.append(next) }
            #expect(received.contains(.event(backdated)), "the backdated event published during the downtime arrived")
            let seen = contexts.withLock { $0 }
            // Computed at `subscribe` (queued while connecting) and on the first connect with no
            // loss behind it, then once more after the reconnect.
            #expect(seen.count >= 2 && seen.dropLast().allSatisfy { $0 == SubscriptionRequestContext(resumingAfter: nil) })
            let resumed = try #require(seen.last?.resumingAfter)
            #expect(resumed >= lost && resumed <= lost + 3, "resumes after the moment the connection was lost")
        }
    }

    @Test func anUnreachableRelayIsRetriedAndNeverEndsTheService() async throws {
        let port = try LoopbackPort.free()
        let connection = RelayConnection(url: "ws://127.0.0.1:\(port)", configuration: Self.configuration(), logger: Self.logger)
        let unresolvable = RelayConnection(url: "ws://no-such-relay.invalid:7777", configuration: Self.configuration(), logger: Self.logger)
        try await unresolvable.running {
            try await connection.running {
                // Polled rather than read after a fixed sleep: on a loaded machine two attempts
                // with 100–400 ms backoff can take longer than 800 ms (seen in a full run).
                let deadline = ContinuousClock.now + .seconds(10)
                while await connection.statistics.failures < 2, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let failures = await connection.statistics.failures
                #expect(failures >= 2, "retried with backoff (\(failures) failures)")
                let unresolvableState = await unresolvable.state
                let retrying: Bool =
                    switch unresolvableState {
                    case .failed, .connecting: true
                    default: false
                    }
                #expect(retrying, "an unresolvable host is a failure to retry, not an end: \(unresolvableState)")
                // A name lookup fails as fast as the resolver answers, which without a network can
                // be its timeout (seconds): polled too.
                let lookupDeadline = ContinuousClock.now + .seconds(30)
                while await unresolvable.statistics.failures < 1, ContinuousClock.now < lookupDeadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(await unresolvable.statistics.failures >= 1)
                let relay = try RelayFixture(port: port)
                try await relay.start()
                #expect(await Self.waitFor(connection, .connected))
            }
        }
    }

    /// NIP-42 against rust-nostr's LocalRelay in "auth for reading" mode: without a key the REQ is
    /// refused and the state says so; with one, the challenge is answered and the REQ served.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func nip42AuthIsAnsweredWhenARelayDemandsIt() async throws {
        let relay = try RelayFixture(implementation: .rustNostr(auth: "read"))
        try await relay.start()
        let keys = Keys.generate()
        let filter = Filter(authors: [keys.publicKey], kinds: [1])

        let anonymous = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: Self.logger)
        try await anonymous.running {
            var events = await anonymous.subscribe(id: "s", filters: [filter]).makeAsyncIterator()
            let first = await Self.next(&events)
            let refused: Bool = if case .closed(let reason)? = first { reason.hasPrefix("auth-required:") } else { false }
            #expect(refused, "refused without AUTH: \(String(describing: first))")
            #expect(await Self.waitFor(anonymous, .authRequired, seconds: 5))
        }

        var configuration = Self.configuration()
        configuration.authKeys = Keys.generate()
        let authenticated = RelayConnection(url: relay.url, configuration: configuration, logger: Self.logger)
        try await authenticated.running {
            var events = await authenticated.subscribe(id: "s", filters: [filter]).makeAsyncIterator()
            #expect(await Self.next(&events) == .endOfStoredEvents, "served after AUTH")
            #expect(await authenticated.state == .connected)
        }
    }

    /// The reading task routes an EVENT to its subscription's queue without the actor: to the
    /// queue that holds the id now (a replaced subscription's new one), to none once
    /// unsubscribed, and each counted.
    @Test func eventsGoToTheSubscriptionThatHoldsTheIdNow() async throws {
        let connection = RelayConnection(url: "ws://127.0.0.1:1", configuration: Self.configuration(), logger: Self.logger)
        let event = Self.note(Keys.generate(), "routed")
        let message = RelayMessage.event(subscriptionID: "s", event: event).json
        #expect(await connection.receive(message) == nil, "no such subscription")
        // The streams are kept: a stream let go ends its queue.
        let firstStream = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])])
        let first = await connection.receive(message)
        #expect(first?.event == .event(event))
        let secondStream = await connection.subscribe(id: "s", filters: [Filter(kinds: [1, 7])])
        let second = await connection.receive(message)
        #expect(second.map { ObjectIdentifier($0.buffer) } != first.map { ObjectIdentifier($0.buffer) }, "the new queue")
        #expect(second?.buffer.append(.event(event), cost: 1) == true && first?.buffer.append(.event(event), cost: 1) == false)
        await connection.unsubscribe(id: "s")
        #expect(await connection.receive(message) == nil, "unsubscribed")
        #expect(second?.buffer.append(.event(event), cost: 1) == false, "its queue finished")
        #expect(await connection.statistics.events == 4)
        withExtendedLifetime((firstStream, secondStream)) {}
    }

    @Test func garbageFromARelayIsCountedAndIgnored() async throws {
        let connection = RelayConnection(url: "ws://127.0.0.1:1", configuration: Self.configuration(), logger: Self.logger)
        await connection.receive("not json")
        await connection.receive(#"["EVENT","s",{"id":"zz"}]"#)
        await connection.receive(#"["NOTICE","hello"]"#)
        let statistics = await connection.statistics
        #expect(statistics.invalidMessages == 2)
        #expect(statistics.notices == 1)
    }
}
