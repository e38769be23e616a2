import NIOCore
import NIOWebSocket

/// Fails a relay socket on a frame RFC 6455 forbids a server to send: reserved bits set when no
/// extension was negotiated (the relay speaks something else), or a masked frame. It sits before
/// the fragment aggregator, which rebuilds a message's frame without its fragments' bits.
final class RelaySocketFrameCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let violation: String? =
            if frame.rsv1 || frame.rsv2 || frame.rsv3 {
                "reserved bits set"
            } else if frame.maskKey != nil {
                "a masked frame from the server"
            } else {
                nil
            }
        guard let violation else { return context.fireChannelRead(data) }
        context.fireErrorCaught(RelaySocket.Failure.protocolError(violation))
        context.close(promise: nil)
    }
}
