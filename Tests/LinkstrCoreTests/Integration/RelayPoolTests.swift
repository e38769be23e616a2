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
}
