import NIOCore
import NIOWebSocket
import NostrProtocol

/// The sending side of a `RelaySocket`, shared by the caller's writer, the reader (which answers
/// pings and the relay's close) and the ping loop. Every frame a client sends is masked
/// (RFC 6455 §5.3).
///
/// Data frames wait for the socket to take them, which is what slows a caller down to the
/// relay's pace. Control frames never wait: a relay that stops reading must not be able to hold
/// up the ping deadline or the close. A pong is left out while the socket is full (a relay that
/// floods pings and reads nothing gets no queue of pongs), and a ping or close frame is one small
/// frame per interval or connection.
final class RelaySocketLink: Sendable {
    private struct State {
        /// A ping went out and no pong has come back since.
        var awaitingPong = false
        var closeSent = false
    }

    private let channel: any Channel
    private let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
    private let state = Locked(State())

    init(channel: any Channel, outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>) {
        self.channel = channel
        self.outbound = outbound
    }

    /// A text or binary message, once the socket takes it; refused after the close frame.
    func sendData(_ opcode: WebSocketOpcode, _ data: ByteBuffer) async throws {
        guard !state.withLock({ $0.closeSent }) else { throw ChannelError.outputClosed }
        try await outbound.write(frame(opcode, data))
    }

    /// Pings every `interval` and throws when the previous ping is still unanswered: a relay
    /// that stopped answering (or a path that silently dropped) is found within two intervals.
    func pingLoop(every interval: Duration) async throws {
        while true {
            try await Task.sleep(for: interval)
            let unanswered = state.withLock { state in
                defer { state.awaitingPong = true }
                return state.awaitingPong
            }
            if unanswered { throw RelaySocket.Failure.pingTimedOut }
            channel.writeAndFlush(frame(.ping, ByteBuffer()), promise: nil)
        }
    }

    func pinged(_ data: ByteBuffer) {
        guard channel.isWritable, !state.withLock({ $0.closeSent }) else { return }
        channel.writeAndFlush(frame(.pong, data), promise: nil)
    }

    func ponged() {
        state.withLock { $0.awaitingPong = false }
    }

    /// The relay's close frame, answered unless ours went first. The answer is always "normal
    /// closure": echoing the relay's code could send one that must never be sent (1005, 1006).
    func closeReceived() {
        guard markCloseSent() else { return }
        sendClose(.normalClosure)
    }

    /// Ends the connection from this side: a close frame with `code`, then what the relay still
    /// sends read and dropped until its close frame or the end of the stream, for at most
    /// `timeout`. When reading has already ended (a reader that was cancelled), the stream ends
    /// at once. Nothing when the relay closed first.
    func close(code: WebSocketErrorCode, draining messages: RelaySocketMessages, within timeout: Duration) async {
        guard markCloseSent() else { return }
        sendClose(code)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { while (try? await messages.next()) != nil {} }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func sendClose(_ code: WebSocketErrorCode) {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        channel.writeAndFlush(frame(.connectionClose, data), promise: nil)
    }

    private func frame(_ opcode: WebSocketOpcode, _ data: ByteBuffer) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: data)
    }

    /// True when this call is the one that sends the close frame.
    private func markCloseSent() -> Bool {
        state.withLock { state in
            defer { state.closeSent = true }
            return !state.closeSent
        }
    }
}
