import Foundation
import Logging
import NostrProtocol
import NostrRelay
import Synchronization
import TestSupport
import Testing

/// `RelayConnection` against a relay that floods, on loopback (`HostileRelay`): a slow consumer
/// stops the socket instead of filling memory, what a pause may have cost is asked for again,
/// limits close the connection for longer, and relay text reaches the log escaped and throttled.
@Suite(.serialized) struct RelayBackpressureTests {
    /// A kind-1 note with `size` bytes of content: the connection itself checks nothing.
    static func note(size: Int = 2_000) -> NostrEvent {
        RelayConnectionTests.note(Keys.generate(), String(repeating: "x", count: size))
    }

    /// Records every context the subscription's filters are computed for.
    final class Contexts: Sendable {
        let seen = Mutex<[SubscriptionRequestContext]>([])
        var resumed: [Int64] { seen.withLock { $0.compactMap(\.resumingAfter) } }

        func filters(_ context: SubscriptionRequestContext) -> [Filter] {
            seen.withLock { $0.append(context) }
            return [Filter(kinds: [1])]
        }
    }

    static func configuration(bufferBytes: Int = 64 << 10) -> RelayConfiguration {
        var configuration = RelayConnectionTests.configuration()
        configuration.inboundBufferBytes = bufferBytes
        return configuration
    }

    /// Reads items until `events` events and `eoses` EOSEs have come (or 30 s pass without one).
    static func drain(_ iterator: inout SubscriptionStream.AsyncIterator, events: Int, eoses: Int = 1) async -> (events: Int, eoses: Int) {
        var counts = (events: 0, eoses: 0)
        while counts.events < events || counts.eoses < eoses, let item = await RelayConnectionTests.next(&iterator, seconds: 30) {
            switch item {
            case .event: counts.events += 1
            case .endOfStoredEvents: counts.eoses += 1
            case .closed: break
            }
        }
        return counts
    }

    @Test(.timeLimit(.minutes(2))) func aConsumerThatFallsBehindStopsTheRelaysSocketAndLosesNothing() async throws {
        let total = 20_000
        let relay = try HostileRelay { _ in .init(flood: .init(items: [.event(Self.note().json)], total: total)) }
        try await relay.start()
        let connection = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: RelayConnectionTests.logger)
        try await connection.running {
            var events = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])]).makeAsyncIterator()
            #expect(await eventually(within: 30) { await connection.statistics.readingPaused }, "the reader waits for the consumer")
            #expect(await eventually(within: 30) { relay.records.first?.stalled == true }, "and the relay's socket stops taking data")
            #expect(relay.records[0].flooded < total, "the relay could not send everything ahead of the consumer")
            let counts = await Self.drain(&events, events: total)
            #expect(counts.events == total, "every event arrived once the consumer caught up: paused, not dropped")
            let statistics = await connection.statistics
            #expect(statistics.readPauses > 0 && !statistics.readingPaused)
        }
        await relay.stop()
    }

    /// Subscribes as "s" on a connection that asks again after a read pause of 1 s, and runs
    /// `body` with it, which makes a pause; then checks what a long pause leaves: a REQ sent again
    /// on the same connection, first from before the pause began, and counted once per REQ. (On a
    /// loaded machine the test's own draining can pause past the threshold too, and ask again
    /// later; the first time is the pause the test made.)
    static func checkAskingAgain(
        after relay: HostileRelay, _ body: @Sendable (RelayConnection, inout SubscriptionStream.AsyncIterator) async throws -> Void
    ) async throws {
        var configuration = Self.configuration()
        configuration.resubscribeAfterPause = .seconds(1)
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: RelayConnectionTests.logger)
        let contexts = Contexts()
        let before = UnixTime.now()
        try await connection.running {
            var events = await connection.subscribe(id: "s", filters: contexts.filters).makeAsyncIterator()
            try await body(connection, &events)
            #expect(await eventually(within: 30) { relay.records[0].requests >= 2 }, "the REQ was sent again on the same connection")
        }
        let after = UnixTime.now()
        let resumed = contexts.resumed
        #expect(resumed.count >= 1)
        if let from = resumed.first {
            #expect(
                from >= before - RelayConnection.pauseMargin && from <= after - RelayConnection.pauseMargin,
                "from before the pause began (\(from), the test ran \(before)…\(after))")
        }
        #expect(await connection.statistics.resubscribedAfterPause == resumed.count)
        #expect(relay.records.count == 1)
    }

    @Test(.timeLimit(.minutes(2))) func aLongPauseAsksForTheSubscriptionAgainFromBeforeIt() async throws {
        let relay = try HostileRelay { _ in .init(flood: .init(items: [.event(Self.note().json)], total: 20_000)) }
        try await relay.start()
        try await Self.checkAskingAgain(after: relay) { _, events in
            #expect(await eventually(within: 30) { relay.records.first?.stalled == true })
            // The consumer stays away long enough for this to count as a long pause.
            try await Task.sleep(for: .milliseconds(1_500))
            _ = await Self.drain(&events, events: 20_000, eoses: 2)
        }
        await relay.stop()
    }

    /// A replay holds only what was stored when the relay took the REQ: a long pause in the middle
    /// of one asks again from before the pause once the replay's EOSE has come, not straight away
    /// (which would restart the replay) and not never (the live events dropped in the pause).
    @Test(.timeLimit(.minutes(2))) func aLongPauseDuringAReplayAsksAgainOnceTheReplayEnds() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        let stored = 4_000
        for _ in 0..<stored { relay.publish(Self.note()) }
        try await Self.checkAskingAgain(after: relay) { connection, events in
            #expect(await eventually(within: 30) { await connection.statistics.readingPaused }, "the replay filled the budget")
            try await Task.sleep(for: .milliseconds(1_500))
            // The first replay, then the one asked for after it (from before the pause, so all of it again).
            let counts = await Self.drain(&events, events: 2 * stored, eoses: 2)
            #expect(counts.events == 2 * stored && counts.eoses == 2)
        }
        await relay.stop()
    }

    @Test(.timeLimit(.minutes(2))) func aConnectionLostDuringAPauseResumesFromBeforeThePause() async throws {
        let relay = try HostileRelay { number in
            number == 1
                ? .init(flood: .init(items: [.event(Self.note().json)], total: 20_000), slowReader: .disconnect(after: .milliseconds(300)))
                : .init()
        }
        try await relay.start()
        let connection = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: RelayConnectionTests.logger)
        let contexts = Contexts()
        let before = UnixTime.now()
        try await connection.running {
            var events = await connection.subscribe(id: "s", filters: contexts.filters).makeAsyncIterator()
            #expect(await eventually(within: 30) { relay.records.first?.closedAsSlow == true }, "the relay gave up on the slow reader")
            let closedBy = UnixTime.now()
            // What was in the socket is read; then the loss is noticed, and the REQ goes out again.
            _ = await Self.drain(&events, events: 0, eoses: 2)
            let resumed = contexts.resumed
            #expect(resumed.count == 1)
            if let from = resumed.first {
                #expect(
                    from >= before - RelayConnection.pauseMargin && from <= closedBy - RelayConnection.pauseMargin,
                    "from before the pause (\(from)), not from when the loss was noticed (after \(closedBy))")
            }
        }
        #expect(relay.records.count == 2)
        await relay.stop()
    }

    @Test(.timeLimit(.minutes(2))) func aFloodingRelayIsDisconnectedAndKeptAwayForTheLongerBackoff() async throws {
        let relay = try HostileRelay { number in number == 1 ? .init(flood: .init(items: [.event(Self.note(size: 10).json)])) : .init() }
        try await relay.start()
        var configuration = Self.configuration()
        configuration.limits = RelayLimits(maxEventsPerSecond: 50, backoff: RelayBackoff(base: .seconds(1), cap: .seconds(1), jitter: 0))
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: RelayConnectionTests.logger)
        try await connection.running {
            let stream = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])])
            let reader = Task { for await _ in stream {} }
            #expect(await eventually(within: 30) { relay.records.count == 2 }, "reconnected after the breach")
            reader.cancel()
        }
        let statistics = await connection.statistics
        #expect(statistics.limitDisconnects[.flood] == 1 && statistics.lastBreach == .flood)
        let records = relay.records
        if let closed = records[0].closed {
            // The ordinary backoff here is 100 ms; a breach waits the limits' 1 s.
            #expect(records[1].opened - closed >= .milliseconds(900), "waited \(records[1].opened - closed)")
        }
        await relay.stop()
    }

    @Test(.timeLimit(.minutes(2))) func invalidEventsReportedByTheConsumerCloseEvenAQuietConnection() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        var configuration = Self.configuration()
        configuration.limits = RelayLimits(maxInvalid: 3, backoff: RelayBackoff(base: .seconds(30), cap: .seconds(30), jitter: 0))
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: RelayConnectionTests.logger)
        try await connection.running {
            var events = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])]).makeAsyncIterator()
            #expect(await RelayConnectionTests.next(&events) == .endOfStoredEvents)
            for _ in 0..<3 { connection.countInvalid() }
            #expect(await connection.state == .connected, "three is the limit, not past it")
            connection.countInvalid()
            #expect(
                await eventually(within: 10) { relay.records.first?.closed != nil },
                "the fourth closed the connection though the relay sent nothing")
            #expect(await eventually(within: 10) { await connection.statistics.lastBreach == .invalid })
            #expect(await connection.state == .failed(RelayError.limitExceeded(.invalid).description))
            #expect(await connection.statistics.invalidEvents == 4)
        }
        await relay.stop()
    }

    /// A consumer that finds a flood invalid breaks the limit while the reading task is still busy
    /// with the flood. Whatever the reading task was doing when it was stopped, the connection ends
    /// as the breach it is: counted, and followed by the breach backoff. (The WebSocket library's
    /// close handshake, run after the exchange, could fail with `CancellationError` and have that
    /// taken for the reason, so that some breaches went uncounted and were retried at once.)
    @Test(.timeLimit(.minutes(2))) func everyConnectionClosedForInvalidEventsCountsAsABreach() async throws {
        let event = Self.note(size: 200)
        let relay = try HostileRelay { _ in .init(flood: .init(items: [.event(event.json)])) }
        try await relay.start()
        var configuration = Self.configuration()
        configuration.limits = RelayLimits(maxInvalid: 5, backoff: RelayBackoff(base: .milliseconds(20), cap: .milliseconds(20), jitter: 0))
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: RelayConnectionTests.logger)
        let connections = 30
        try await connection.running {
            let stream = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])])
            // Every event is reported invalid, as a consumer checking ids would.
            let consumer = Task {
                for await item in stream { if case .event = item { connection.countInvalid() } }
            }
            #expect(await eventually(within: 60) { relay.records.count > connections }, "\(relay.records.count) connections")
            consumer.cancel()
        }
        let statistics = await connection.statistics
        let closed = relay.records.count { $0.closed != nil }
        #expect(closed >= connections)
        #expect(
            statistics.limitDisconnects[.invalid] == statistics.failures,
            "\(statistics.failures) disconnects, \(statistics.limitDisconnects[.invalid] ?? 0) of them counted as the breach")
        await relay.stop()
    }

    @Test(.timeLimit(.minutes(2))) func relayTextIsLoggedEscapedAndAtMostOncePerInterval() async throws {
        let forged = #"["NOTICE","slow down\n2026-11-24T06:00:00+0000 critical : forged line\u001b[2K"]"#
        let relay = try HostileRelay { _ in .init(flood: .init(items: [.message(forged), .closed("error: no\nmore")], total: 200)) }
        try await relay.start()
        let capture = CapturedLog()
        var logger = Logger(label: "relay-text") { _ in capture.handler() }
        logger.logLevel = .info
        let connection = RelayConnection(url: relay.url, configuration: Self.configuration(), logger: logger)
        try await connection.running {
            let stream = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])])
            let reader = Task { for await _ in stream {} }
            #expect(
                await eventually(within: 30) {
                    let statistics = await connection.statistics
                    return statistics.notices == 100 && statistics.closed == 100
                })
            reader.cancel()
        }
        let lines = capture.lines.withLock { $0 }
        let relayText = lines.filter { $0.contains("relay.text=") }
        #expect(relayText.count == 1, "one line for 200 relay texts in well under the interval: \(relayText)")
        #expect(lines.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1b}") }, "no relay text reached the log raw")
        #expect(relayText.first?.contains(#"slow down\n2026-11-24"#) == true, "escaped, still readable: \(relayText)")
        #expect(await connection.statistics.suppressedLogLines == 199)
        await relay.stop()
    }
}
