import NIOCore
import NIOWebSocket

/// The data messages a relay sends on a `RelaySocket`, in order. Control frames are handled as
/// they are read: a ping is answered, a pong noted, and a close frame answered and taken as the
/// end of the messages.
///
/// A reference, so that what the caller leaves unread can be drained after it returns; it is
/// read by one task at a time (the caller's, then the close handshake's), which is what makes the
/// unchecked `Sendable` sound.
final class RelaySocketMessages: @unchecked Sendable {
    private var inbound: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator
    private let link: RelaySocketLink

    init(inbound: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator, link: RelaySocketLink) {
        self.inbound = inbound
        self.link = link
    }

    /// The next text or binary message; nil once the relay has closed.
    func next() async throws -> RelaySocket.Message? {
        while let frame = try await inbound.next() {
            switch frame.opcode {
            case .text:
                return .text(String(buffer: frame.unmaskedData))
            case .binary:
                return .binary(bytes: frame.length)
            case .ping:
                link.pinged(frame.unmaskedData)
            case .pong:
                link.ponged()
            case .connectionClose:
                link.closeReceived()
                return nil
            default:
                // The aggregator leaves no continuation frame; anything else is an unknown opcode.
                throw RelaySocket.Failure.protocolError("unknown opcode")
            }
        }
        return nil
    }
}
