import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request is not read in full within `limit` of its head.
///
/// Hummingbird's idle timer restarts with every part it decodes, so a body sent a byte at a time
/// would hold its connection forever, and a route that answers without reading the body (a probe,
/// a 429, a 404) leaves the rest to be read with no deadline at all. This sits right after the
/// HTTP decoder and bounds every request, whatever route it takes; the head itself is bounded by
/// the idle timer (`HTTP_IDLE_TIMEOUT_SECONDS`), which no partial head restarts.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let limit: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: limit) { bound.value.close(promise: nil) }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}
