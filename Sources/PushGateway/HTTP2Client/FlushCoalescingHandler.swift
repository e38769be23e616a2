import NIOCore

/// Passes on at most one flush per event-loop tick, and with it the tick's bytes as one buffer:
/// the first flush of a tick is held until the tasks already queued on the loop have run, the
/// flushes after it join it, and the frames written meanwhile are gathered into one write.
///
/// It sits between TLS and `NIOHTTP2Handler` so that `HTTP2StreamHandler` can flush after every
/// request. NIOHTTP2 collects the DATA frames written between two flushes in a set and sends them
/// in that set's order, not the order written; the server then finishes the streams out of
/// order, and each close shifts NIOHTTP2's per-stream lists on both ends (see `HTTP2StreamHandler`).
/// Flushed one by one, the frames keep their order; held here, a round of requests still goes out
/// in one TLS write and one system call. Gathered, they also go out in as few TLS records as the
/// bytes allow: NIOSSL seals every write it is given as a record of its own, and a request is a
/// HEADERS and a DATA frame of a few hundred bytes each, so each record's sealing and framing
/// (and the server's opening of it) were paid twice a request.
final class FlushCoalescingHandler: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var flushScheduled = false
    /// The bytes written since the last flush passed on, in order.
    private var gathered: ByteBuffer?
    /// Whether `gathered` is a buffer this handler allocated, not one it was handed.
    private var gatheredIsOwn = false
    /// Completed when `gathered` has been written (one promise for the writes it holds).
    private var gatheredPromise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data) else {
            // A file region (never written by NIOHTTP2 here) goes as it is, after what came before.
            writeGathered(context: context)
            context.write(data, promise: promise)
            return
        }
        if var held = gathered {
            gathered = nil
            if !gatheredIsOwn {
                // The tick's first buffer is NIOHTTP2's: the bytes move to a buffer of this
                // handler's, which then grows in place (nothing else refers to it).
                var own = context.channel.allocator.buffer(capacity: max(4_096, 2 * (held.readableBytes + bytes.readableBytes)))
                own.writeBuffer(&held)
                held = own
                gatheredIsOwn = true
            }
            held.writeBuffer(&bytes)
            gathered = held
        } else {
            gathered = bytes
            gatheredIsOwn = false
        }
        if let promise {
            if gatheredPromise == nil { gatheredPromise = context.eventLoop.makePromise() }
            gatheredPromise?.futureResult.cascade(to: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            guard handler.flushScheduled else { return }
            handler.flushScheduled = false
            handler.writeGathered(context: context)
            context.flush()
        }
    }

    /// A held flush goes out first: TLS does not flush what is buffered when it closes, and the
    /// last frames written (a GOAWAY or RST_STREAM on an error, a WINDOW_UPDATE) would be lost.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if flushScheduled || gathered != nil {
            flushScheduled = false
            writeGathered(context: context)
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }

    /// Bytes still held when the handler leaves the pipeline are never written: their writes fail.
    func handlerRemoved(context: ChannelHandlerContext) {
        gathered = nil
        let promise = gatheredPromise
        gatheredPromise = nil
        promise?.fail(ChannelError.ioOnClosedChannel)
    }

    private func writeGathered(context: ChannelHandlerContext) {
        guard let bytes = gathered else { return }
        let promise = gatheredPromise
        gathered = nil
        gatheredPromise = nil
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }
}
