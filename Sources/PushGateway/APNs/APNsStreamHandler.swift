import NIOCore
import NIOHPACK
import NIOHTTP2

/// One APNs request as written into an `APNsHTTP2Connection`'s pipeline.
struct APNsStreamRequest: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    var promise: EventLoopPromise<APNsStreamResponse>
}

struct APNsStreamResponse: Sendable {
    var status: Int
    var body: ByteBuffer
    /// From the request's frames being written to the answer's last frame (zero when unknown).
    var elapsed: TimeAmount = .zero
}

/// Why a request got no answer; the sender treats every case as a connection failure (retried).
enum APNsConnectionError: Error, Equatable {
    case closed
    case goingAway
    case streamReset(HTTP2ErrorCode)
    case malformedResponse
    case timedOut
}

/// HTTP/2 requests straight on `NIOHTTP2Handler` frames, with no channel per stream: each request
/// becomes a HEADERS and a DATA frame on the next odd stream id, and the response frames are
/// matched back by id. `NIOHTTP2Handler` buffers new streams above the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` and applies outbound flow control. Without a multiplexer
/// nobody refills the connection's receive window, so this handler does: every error answer
/// carries a small JSON body, and after 64 KB of them the server could send no more. Stream-level
/// windows never run out (one answer is at most a few hundred bytes).
///
/// Requests also wait here, in order, for the server's connection-level send window
/// (RFC 9113 §6.9.1) to hold their whole body, instead of in NIOHTTP2's flow-control buffer.
/// That buffer sends what the window allows and puts a stream whose DATA frame it had to split at
/// the back of its round-robin queue; that stream then finishes after hundreds of later ones, and
/// while it stays open at the front of NIOHTTP2's per-stream lists, every other stream's close
/// removes from the middle of them, an O(open streams) shift each time. With a server that hands
/// window back in 16 KB steps and 1,000 streams open, that was a third of the gateway's CPU per
/// push.
///
/// This is what a stream channel per request (AsyncHTTPClient's HTTP/2 path) cost most of the
/// CPU of a push for.
final class APNsStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = APNsStreamRequest
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var promise: EventLoopPromise<APNsStreamResponse>
        var status: Int?
        var body: ByteBuffer?
        let startedAt: NIODeadline
    }

    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    /// Set by GOAWAY, a close, or stream ids running out: no new requests on this connection.
    private(set) var isUsable = true
    private let requestTimeout: TimeAmount
    private var watchdog: RepeatedTask?
    private var context: ChannelHandlerContext?
    /// Until the server's first SETTINGS frame its stream limit is unknown (RFC 9113 treats it as
    /// unlimited), so requests wait here instead of overrunning it.
    private var waitingForSettings: [(APNsStreamRequest, EventLoopPromise<Void>?)]? = []
    /// What the server lets this side send on the connection before its next WINDOW_UPDATE on
    /// stream 0 (RFC 9113 §6.9.1: 65,535 at first; SETTINGS do not change it; only DATA counts).
    private var connectionWindow = 65_535
    /// Requests whose body does not fit `connectionWindow` yet, oldest first, with when they came.
    private var waitingForWindow = CircularBuffer<(request: APNsStreamRequest, promise: EventLoopPromise<Void>?, since: NIODeadline)>()

    init(requestTimeout: TimeAmount) {
        self.requestTimeout = requestTimeout
    }

    var inFlight: Int { streams.count }

    private var addedAt = NIODeadline.now()
    /// Response bytes received since the last connection-level WINDOW_UPDATE.
    private var unacknowledgedBytes = 0

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        addedAt = .now()
        // One timer per connection, not one per request: every few seconds, requests older than
        // the timeout fail and the connection is closed (an answer that never came means the
        // connection is not to be trusted).
        let timeout = requestTimeout
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        watchdog = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(2), delay: .seconds(2)) { _ in
            let (handler, context) = loopBound.value
            let now = NIODeadline.now()
            let settingsOverdue = !(handler.waitingForSettings?.isEmpty ?? true) && now - handler.addedAt > timeout
            let windowOverdue = handler.waitingForWindow.first.map { now - $0.since > timeout } ?? false
            if settingsOverdue || windowOverdue || handler.streams.values.contains(where: { now - $0.startedAt > timeout }) {
                handler.failAll(.timedOut)
                context.close(promise: nil)
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        watchdog?.cancel()
        failAll(.closed)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if waitingForSettings != nil {
            waitingForSettings?.append((request, promise))
            return
        }
        submit(request, context: context, promise: promise)
    }

    /// Sends `request` now if the connection's window holds its body and nothing older waits for
    /// it; otherwise queues it. With no stream open it is sent regardless: the window can only
    /// grow by the server's WINDOW_UPDATE, and if this side's count were ever short of the real
    /// window, waiting for an answer that is not coming would stall the connection.
    private func submit(_ request: APNsStreamRequest, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        if waitingForWindow.isEmpty, request.body.readableBytes <= connectionWindow || streams.isEmpty {
            send(request, context: context, promise: promise)
        } else {
            waitingForWindow.append((request, promise, .now()))
        }
    }

    /// Sends the queued requests that fit the window now (the first one regardless with no stream
    /// open; all of them once the connection is unusable, which fails them); true if any was written.
    private func sendWaiting(context: ChannelHandlerContext) -> Bool {
        var sent = false
        while let first = waitingForWindow.first,
            first.request.body.readableBytes <= connectionWindow || streams.isEmpty || !isUsable
        {
            waitingForWindow.removeFirst()
            send(first.request, context: context, promise: first.promise)
            sent = true
        }
        return sent
    }

    private func send(_ request: APNsStreamRequest, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard isUsable else {
            request.promise.fail(APNsConnectionError.goingAway)
            promise?.succeed()
            return
        }
        connectionWindow -= request.body.readableBytes
        let id = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(id) + 2)
        if Int32(nextStreamID) > Int32.max - 2 { isUsable = false }
        streams[id] = Stream(promise: request.promise, startedAt: .now())
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenFailure { error in
            handler.value.fail(id, error)
        }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
            promise: written)
        // One request per flush: NIOHTTP2 sends the DATA frames of one flush in no set order
        // (`FlushCoalescingHandler` below it turns these flushes into one write per tick).
        context.flush()
        promise?.succeed()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            if let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                streams[frame.streamID]?.status = status
            }
            if headers.endStream { finish(frame.streamID) }
        case .data(let data):
            unacknowledgedBytes += data.data.readableBytes + (data.paddingBytes ?? 0)
            if unacknowledgedBytes >= 16 * 1024 {
                // Hand the consumed bytes back to the server (RFC 9113 §6.9) on the connection.
                context.writeAndFlush(
                    wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                    promise: nil)
                unacknowledgedBytes = 0
            }
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0 {
                if streams[frame.streamID]?.body == nil {
                    streams[frame.streamID]?.body = bytes
                } else {
                    streams[frame.streamID]?.body?.writeBuffer(&bytes)
                }
            }
            if data.endStream { finish(frame.streamID) }
        case .settings(.settings):
            if let waiting = waitingForSettings {
                waitingForSettings = nil
                for (request, promise) in waiting { submit(request, context: context, promise: promise) }
                context.flush()
            }
        case .windowUpdate(let increment) where frame.streamID == .rootStream:
            connectionWindow += increment
            if sendWaiting(context: context) { context.flush() }
        case .rstStream(let code):
            fail(frame.streamID, APNsConnectionError.streamReset(code))
        case .goAway(let lastStreamID, _, _):
            // Streams above lastStreamID were not processed: they fail as `goingAway` and the pool
            // sends them again on a new connection. The rest finish; then the connection closes.
            isUsable = false
            for id in streams.keys where id > lastStreamID { fail(id, APNsConnectionError.goingAway) }
            // Not sent yet: `send` fails each as going away, and the pool sends it again elsewhere.
            _ = sendWaiting(context: context)
            closeIfDrained()
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isUsable = false
        failAll(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        isUsable = false
        failAll(.closed)
        context.close(promise: nil)
    }

    private func finish(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        guard let status = stream.status else {
            stream.promise.fail(APNsConnectionError.malformedResponse)
            return
        }
        stream.promise.succeed(APNsStreamResponse(status: status, body: stream.body ?? ByteBuffer(), elapsed: .now() - stream.startedAt))
        if streams.isEmpty, let context, sendWaiting(context: context) { context.flush() }
        closeIfDrained()
    }

    private func closeIfDrained() {
        if !isUsable, streams.isEmpty, waitingForWindow.isEmpty { context?.close(promise: nil) }
    }

    private func fail(_ id: HTTP2StreamID, _ error: any Error) {
        streams.removeValue(forKey: id)?.promise.fail(error)
        closeIfDrained()
    }

    private func failAll(_ error: APNsConnectionError) {
        let waiting = waitingForSettings ?? []
        waitingForSettings = nil
        for (request, promise) in waiting {
            request.promise.fail(error)
            promise?.fail(error)
        }
        let held = waitingForWindow
        waitingForWindow.removeAll()
        for (request, promise, _) in held {
            request.promise.fail(error)
            promise?.fail(error)
        }
        let pending = streams
        streams.removeAll()
        for stream in pending.values { stream.promise.fail(error) }
    }
}
