import NIOCore

/// Passes on at most one flush per event-loop tick: the first flush of a tick is held until the
/// tasks already queued on the loop have run, and the flushes after it join it.
///
/// It sits between TLS and `NIOHTTP2Handler` so that `HTTP2StreamHandler` can flush after every
/// request. NIOHTTP2 collects the DATA frames written between two flushes in a set and sends them
/// in that set's order, not the order written; the server then finishes the streams out of
/// order, and each close shifts NIOHTTP2's per-stream lists on both ends (see `HTTP2StreamHandler`).
/// Flushed one by one, the frames keep their order; held here, a round of requests still goes out
/// in one TLS write and one system call.
final class FlushCoalescingHandler: ChannelOutboundHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private var flushScheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            guard handler.flushScheduled else { return }
            handler.flushScheduled = false
            context.flush()
        }
    }

    /// A held flush goes out first: TLS does not flush what is buffered when it closes, and the
    /// last frames written (a GOAWAY or RST_STREAM on an error, a WINDOW_UPDATE) would be lost.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if flushScheduled {
            flushScheduled = false
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }
}
