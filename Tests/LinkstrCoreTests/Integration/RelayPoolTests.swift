import LinkstrCore
import Logging
import NostrProtocol
import NostrRelay
import TestSupport
import Testing

/// The client's relay pool against a real `nostr-relay` on loopback.
@Suite struct RelayPoolTests {
    /// Starting a relay adds its subscriptions one actor hop at a time, and the connection runs
    /// meanwhile. With many subscriptions the connection is up before the last one is added: its
    /// `.connected` must still reach the pool's statuses and the status handler, or the relay shows
    /// "connecting" for as long as the connection lasts and every send fails. (Under load the same
    /// race hit with the two subscriptions the core starts with.)
    @Test func aConnectionUpBeforeItsSubscriptionsAreAddedIsReportedConnected() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let pool = RelayPool(logger: Logger(label: "test"))
        let reported = Locked<[String: RelayStatus]>([:])
        let subscriptions = (0..<3_000).map { index in
            RelayPool.Subscription(id: "s\(index)") { [Filter(kinds: [UInt16(30_000 + index % 100)], limit: 1)] }
        }
        await pool.start(
            entries: [RelayEntry(url: relay.url)], subscriptions: subscriptions, onEvent: { _, _, _ in },
            onStatus: { statuses in reported.withLock { $0 = statuses } })

        #expect(await TestSupport.eventually(within: 10) { await pool.statuses[relay.url] == .connected }, "the pool's own status")
        #expect(await TestSupport.eventually(within: 10) { reported.withLock { $0[relay.url] } == .connected }, "the status handler")
        try await pool.waitForWritableRelay(timeout: .seconds(5))
        await pool.stop()
    }

    /// A recipient's inbox that takes the wrap and never answers (a dead or swallowing relay the
    /// client meets for the first time) must not hold the send for its 5 s timeout once our own
    /// relay accepted. The wrap still goes out, and the one-off connection is closed once its
    /// send has timed out.
    @Test func aSendReturnsOnceAcceptedWithoutWaitingForASilentRecipientInbox() async throws {
        let inbox = try HostileRelay(answersEvents: .never)
        try await Self.withPool(ours: [try HostileRelay()], others: [inbox]) { pool in
            let wrap = Self.event("to a silent inbox")

            let began = ContinuousClock.now
            try await pool.publish([wrap], addressed: [wrap.id: [inbox.url]])
            let took = ContinuousClock.now - began

            #expect(took < .seconds(4), "the send waited \(took) for an inbox that never answers (its timeout is 5 s)")
            #expect(await TestSupport.eventually(within: 10) { inbox.storedIDs == [wrap.id] }, "the wrap reached the inbox")
            #expect(inbox.records.count == 1)
            await pool.finishDeliveries()
            #expect(await TestSupport.eventually(within: 30) { inbox.records.allSatisfy { $0.closed != nil } }, "closed after its timeout")
        }
    }

    /// An inbox that answers late gets its answer awaited in the background: the connection made
    /// for it stays up until then, and `finishDeliveries` returns only after it.
    @Test func aSlowRecipientInboxIsWaitedForInTheBackgroundAndThenClosed() async throws {
        // Long enough that the steps below fit before it on a busy machine, and short of the 5 s
        // an inbox's answer is waited for.
        let inbox = try HostileRelay(answersEvents: .acceptAfter(.seconds(3)))
        try await Self.withPool(ours: [try HostileRelay()], others: [inbox]) { pool in
            let wrap = Self.event("to a slow inbox")

            let began = ContinuousClock.now
            try await pool.publish([wrap], addressed: [wrap.id: [inbox.url]])
            #expect(ContinuousClock.now - began < .seconds(3), "returned before the inbox answered")
            #expect(await TestSupport.eventually(within: 3) { inbox.storedIDs == [wrap.id] })
            #expect(inbox.records.allSatisfy { $0.closed == nil }, "still open while its answer is awaited")
            await pool.finishDeliveries()
            #expect(ContinuousClock.now - began >= .seconds(3), "finishDeliveries waited for the answer")
            #expect(await TestSupport.eventually(within: 30) { inbox.records.allSatisfy { $0.closed != nil } })
        }
    }

    /// The connection made for a recipient's inbox closes once its own send has answered, not
    /// when the slowest relay of ours does; stopping the pool waits for that slow relay's answer
    /// instead of cutting its send off (a request to vanish before logout, for one).
    @Test func anInboxConnectionClosesWithItsOwnSendAndStopWaitsForTheSlowRelay() async throws {
        // Long enough for the steps below on a busy machine, and short of our relays' 10 s timeout.
        let slow = try HostileRelay(answersEvents: .acceptAfter(.seconds(8)))
        let inbox = try HostileRelay()
        try await Self.withPool(ours: [try HostileRelay(), slow], others: [inbox]) { pool in
            let wrap = Self.event("to an inbox, with a slow relay of ours")

            let began = ContinuousClock.now
            try await pool.publish([wrap], addressed: [wrap.id: [inbox.url]])
            #expect(await TestSupport.eventually(within: 8) { inbox.storedIDs == [wrap.id] })
            #expect(
                await TestSupport.eventually(within: 8) { inbox.records.count == 1 && inbox.records.allSatisfy { $0.closed != nil } },
                "the inbox's connection closed")
            #expect(ContinuousClock.now - began < .seconds(8), "before the slow relay answered")
            await pool.stop()
            #expect(ContinuousClock.now - began >= .seconds(8), "stop waited for the slow relay's answer")
        }
    }

    /// A relay of ours that refuses with `restricted:` becomes read-only even when its answer
    /// arrives after the send already returned on another relay's acceptance.
    @Test func aRefusalThatArrivesAfterTheSendReturnedStillMakesTheRelayReadOnly() async throws {
        let accepting = try HostileRelay()
        let refusing = try HostileRelay(answersEvents: .refuse("restricted: members only"))
        try await Self.withPool(ours: [accepting, refusing]) { pool in
            let event = Self.event("hello")

            try await pool.publish([event])
            await pool.finishDeliveries()

            #expect(await pool.statuses[refusing.url] == .readOnly("restricted: members only"))
            #expect(await pool.statuses[accepting.url] == .connected)
        }
    }

    /// When no relay accepts, the send waits for every answer and fails with the refusal; the
    /// refusing relay is read-only by the time the error is thrown.
    @Test func aSendNoRelayAcceptsFailsWithTheRefusalAndMarksTheRelayAtOnce() async throws {
        let refusing = try HostileRelay(answersEvents: .refuse("blocked: not here"))
        try await Self.withPool(ours: [refusing]) { pool in

            await #expect(throws: RelayPool.SendError.notAccepted("blocked: not here")) {
                try await pool.publish([Self.event("refused")])
            }
            #expect(await pool.statuses[refusing.url] == .readOnly("blocked: not here"))
        }
    }

    /// Runs `body` with a pool connected to `ours` (private addresses allowed for the relays an
    /// event is addressed to), `others` listening beside them; stops the pool, then every relay.
    private static func withPool(
        ours: [HostileRelay], others: [HostileRelay] = [], _ body: (RelayPool) async throws -> Void
    ) async throws {
        for relay in ours + others { try await relay.start() }
        let pool = RelayPool(addressedPolicy: nil, logger: Logger(label: "test"))
        await pool.start(entries: ours.map { RelayEntry(url: $0.url) }, subscriptions: [], onEvent: { _, _, _ in }, onStatus: { _ in })
        #expect(
            await TestSupport.eventually(within: 10) {
                let statuses = await pool.statuses
                return ours.allSatisfy { statuses[$0.url] == .connected }
            })
        do {
            try await body(pool)
        } catch {
            await pool.stop()
            for relay in ours + others { await relay.stop() }
            throw error
        }
        await pool.stop()
        for relay in ours + others { await relay.stop() }
    }

    private static func event(_ content: String) -> NostrEvent {
        let keys = Keys.generate()
        return UnsignedEvent(pubkey: keys.publicKey, createdAt: UnixTime.now(), kind: 1, tags: [], content: content).signed(by: keys)
    }
}
