import NostrProtocol
import NostrRelay
import TestSupport
import Testing

/// The WebSocket under `RelayConnection` against servers that do not play the protocol: one that
/// never answers the handshake, one that answers with plain HTTP, a relay that stops reading.
@Suite(.serialized) struct RelaySocketTests {
    /// A server that accepts the TCP connection and never answers the upgrade holds each attempt
    /// for the handshake timeout, and the connection keeps trying.
    @Test func aServerThatNeverAnswersTheUpgradeTimesTheAttemptOut() async throws {
        let silent = try await SilentServer.start()
        defer { Task { await silent.stop() } }
        var configuration = RelayConnectionTests.configuration()
        configuration.handshakeTimeout = .milliseconds(300)
        let connection = RelayConnection(
            url: "ws://127.0.0.1:\(silent.port)", configuration: configuration, logger: RelayConnectionTests.logger)
        try await connection.running {
            #expect(await RelayConnectionTests.waitFor(connection, .failed("the connection or its handshake timed out")))
            #expect(await eventually(within: 10) { silent.accepted >= 2 }, "tried again after the timeout")
        }
    }

    /// An HTTP server where a relay should be answers the upgrade with `200 OK` and would hold the
    /// connection open: each attempt fails, and its socket is closed rather than left to it.
    @Test func aServerThatRefusesTheUpgradeFailsTheAttemptAndGetsItsSocketClosed() async throws {
        let server = try await SilentServer.start(answer: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        defer { Task { await server.stop() } }
        let connection = RelayConnection(
            url: "ws://127.0.0.1:\(server.port)", configuration: RelayConnectionTests.configuration(), logger: RelayConnectionTests.logger)
        try await connection.running {
            #expect(await RelayConnectionTests.waitFor(connection, .failed("the server did not accept the WebSocket upgrade")))
            #expect(await eventually(within: 10) { server.accepted >= 3 }, "tried again")
            #expect(server.open <= 1, "at most the attempt under way holds a socket: \(server.open) of \(server.accepted)")
        }
    }

    /// A relay that stops reading (so its pongs stop too) is hung up on within two ping
    /// intervals, and connected to again.
    @Test func aRelayThatStopsAnsweringPingsIsHungUpOn() async throws {
        let relay = try HostileRelay { subscriber in HostileRelay.Script(stopReading: subscriber == 1) }
        try await relay.start()
        defer { Task { await relay.stop() } }
        var configuration = RelayConnectionTests.configuration()
        // Long enough that a busy machine does not delay a healthy relay's pong past two of them.
        configuration.pingInterval = .seconds(2)
        let connection = RelayConnection(url: relay.url, configuration: configuration, logger: RelayConnectionTests.logger)
        // Every state the connection passes through (a failed state lasts only the backoff).
        let states = await connection.states()
        let hungUp = Task {
            for await state in states where state == .failed("the relay did not answer a ping in time") { return true }
            return false
        }
        try await connection.running {
            _ = await connection.subscribe(id: "s", filters: [Filter(kinds: [1])])
            #expect(await eventually(within: 30) { relay.subscribers.count >= 2 }, "subscribed again on a new connection")
            // The second connection reads and answers: it stays up over several intervals.
            try await Task.sleep(for: .seconds(6))
            #expect(await connection.state == .connected)
            #expect(relay.subscribers.count == 2)
        }
        hungUp.cancel()
        #expect(await hungUp.value, "the first connection ended for want of a pong")
    }
}
