import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request for a `HTTP2ConnectionPool` connection; a round's requests for one connection are
/// written into its pipeline together, as one array.
struct HTTP2StreamRequest: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    /// Where its answer goes: its round's answers, at `index`.
    var answers: HTTP2RoundAnswers
    var index: Int
    /// When the caller stops waiting (`HTTP2ConnectionPool.send(_:answeredBy:)`): past it the
    /// request is never sent, and `CutExpiredRequests` resets its stream.
    var deadline: NIODeadline? = nil

    func fail(_ error: any Error) { answers.answer(index, with: .failure(error)) }
}

/// HTTP/2 requests straight on `NIOHTTP2Handler` frames, with no channel per stream: each request
/// becomes a HEADERS and a DATA frame on the next odd stream id, and the response frames are
/// matched back by id. `NIOHTTP2Handler` buffers new streams above the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` and applies outbound flow control. Without a multiplexer
/// nobody refills the connection's receive window, so this handler does: every error answer
/// carries a small JSON body, and after 64 KB of them the server could send no more. Stream-level
/// windows never run out (one answer is at most a few KB).
///
/// Requests also wait here, in order, for a free stream under the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` and for its connection-level send window (RFC 9113 §6.9.1)
/// to hold their whole body, instead of in NIOHTTP2's buffers. NIOHTTP2's flow-control buffer
/// sends what the window allows and puts a stream whose DATA frame it had to split at the back of
/// its round-robin queue, and it sends the DATA frames released together (by one flush, or by
/// streams freed in one read) in no set order. Streams then finish out of order, and each close
/// removes from the middle of NIOHTTP2's per-stream lists, an O(open streams) shift. With a
/// server that hands window back in 16 KB steps and 1,000 streams open, that was a third of the
/// gateway's CPU per push. Each request is flushed on its own for the same reason
/// (`FlushCoalescingHandler` below NIOHTTP2 keeps that to one TLS write per event-loop tick).
///
/// This is what a stream channel per request (AsyncHTTPClient's HTTP/2 path) cost most of the
/// CPU of a push for.
final class HTTP2StreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    /// A round's requests for this connection, in order, in one write: one pipeline hop and one
    /// write promise for the round instead of one per request. From the write on, this handler
    /// answers every request it was given (`failAll` included).
    typealias OutboundIn = [HTTP2StreamRequest]
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var answers: HTTP2RoundAnswers
        var index: Int
        var status: Int?
        var body: ByteBuffer?
        var retryAfter: String?
        let startedAt: NIODeadline
        let deadline: NIODeadline?

        func fail(_ error: any Error) { answers.answer(index, with: .failure(error)) }
    }

    /// An outbound event: every request whose deadline has passed fails as `timedOut`; one sent
    /// has its stream reset (RST_STREAM CANCEL), one waiting leaves the queue. The connection
    /// goes on, and the watchdog never counts a cut request as one the server left unanswered.
    struct CutExpiredRequests {}

    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    /// Set by GOAWAY, a close, or stream ids running out: no new requests on this connection.
    private(set) var isUsable = true
    private let requestTimeout: TimeAmount
    private var watchdog: RepeatedTask?
    private var context: ChannelHandlerContext?
    /// Until the server's first SETTINGS frame its stream limit is unknown (RFC 9113 treats it as
    /// unlimited), so requests wait here instead of overrunning it.
    private var waitingForSettings: [HTTP2StreamRequest]? = []
    /// What the server lets this side send on the connection before its next WINDOW_UPDATE on
    /// stream 0 (RFC 9113 §6.9.1: 65,535 at first; SETTINGS do not change it; only DATA counts).
    /// Counted here, exactly, as long as NIOHTTP2 sends every DATA frame it is given. NIOHTTP2's
    /// own figure (`NIOHTTP2WindowUpdatedEvent`) is no substitute: it comes re-entrantly while
    /// requests are being written, and a figure from before the last of them would be too high.
    private var connectionWindow = 65_535
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, from its latest SETTINGS (none: no limit).
    private var maxConcurrentStreams = Int.max
    /// Requests waiting for a free stream or for `connectionWindow` to hold their body, oldest
    /// first, with when they came.
    private var waitingForWindow = CircularBuffer<(request: HTTP2StreamRequest, since: NIODeadline)>()

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
        let requests = unwrapOutboundIn(data)
        promise?.succeed()
        if waitingForSettings != nil {
            waitingForSettings?.append(contentsOf: requests)
            return
        }
        for request in requests { submit(request, context: context) }
    }

    /// Sends `request` now if nothing older waits and it may go (`mayGo`); otherwise queues it.
    private func submit(_ request: HTTP2StreamRequest, context: ChannelHandlerContext) {
        if waitingForWindow.isEmpty, mayGo(request) {
            send(request, context: context)
        } else {
            waitingForWindow.append((request, .now()))
        }
    }

    /// A request may be sent when a stream is free and the window holds its body; with no stream
    /// open, regardless (only an answer or the server's WINDOW_UPDATE could free anything, and if
    /// the counts were ever short, waiting for one that is not coming would stall the connection);
    /// on an unusable connection at once, where `send` fails it as going away.
    private func mayGo(_ request: HTTP2StreamRequest) -> Bool {
        !isUsable || streams.isEmpty || (streams.count < maxConcurrentStreams && request.body.readableBytes <= connectionWindow)
    }

    /// Sends the queued requests that may go now, in order (`send` flushes each).
    private func sendWaiting(context: ChannelHandlerContext) {
        while let first = waitingForWindow.first, mayGo(first.request) {
            waitingForWindow.removeFirst()
            send(first.request, context: context)
        }
    }

    private func send(_ request: HTTP2StreamRequest, context: ChannelHandlerContext) {
        // Its caller gave up while it waited for a stream or the window: it must not go out now,
        // here or (as going away) on a fresh connection.
        if let deadline = request.deadline, deadline <= .now() {
            request.fail(HTTP2ConnectionError.timedOut)
            return
        }
        guard isUsable else {
            request.fail(HTTP2ConnectionError.goingAway)
            return
        }
        connectionWindow -= request.body.readableBytes
        let id = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(id) + 2)
        if Int32(nextStreamID) > Int32.max - 2 { isUsable = false }
        streams[id] = Stream(answers: request.answers, index: request.index, startedAt: .now(), deadline: request.deadline)
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
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is CutExpiredRequests else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        let now = NIODeadline.now()
        func expired(_ request: HTTP2StreamRequest) -> Bool { request.deadline.map { $0 <= now } ?? false }
        if let waiting = waitingForSettings, waiting.contains(where: expired) {
            waitingForSettings = waiting.filter { request in
                guard expired(request) else { return true }
                request.fail(HTTP2ConnectionError.timedOut)
                return false
            }
        }
        if waitingForWindow.contains(where: { expired($0.request) }) {
            var kept = CircularBuffer<(request: HTTP2StreamRequest, since: NIODeadline)>()
            for entry in waitingForWindow {
                if expired(entry.request) {
                    entry.request.fail(HTTP2ConnectionError.timedOut)
                } else {
                    kept.append(entry)
                }
            }
            waitingForWindow = kept
        }
        let cut = streams.filter { $0.value.deadline.map { $0 <= now } ?? false }
        for (id, stream) in cut {
            streams.removeValue(forKey: id)
            stream.fail(HTTP2ConnectionError.timedOut)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
        if !cut.isEmpty { context.flush() }
        if !waitingForWindow.isEmpty { sendWaiting(context: context) }
        closeIfDrained()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            if let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                streams[frame.streamID]?.status = status
                // Only a refusal is looked at for it: a 200's headers are not searched again.
                if status != 200, let retryAfter = headers.headers.first(name: "retry-after") {
                    streams[frame.streamID]?.retryAfter = retryAfter
                }
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
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                maxConcurrentStreams = setting.value
            }
            if let waiting = waitingForSettings {
                waitingForSettings = nil
                // The connection's receive window opened to its maximum once, before any request:
                // an answer that crosses the reset of its stream (`CutExpiredRequests`) is dropped
                // by NIOHTTP2 unseen, so its bytes are never handed back below. At 65,535 a few
                // hundred such answers would close the window for good, and every later answer on
                // the connection would wait for it; at 2^31 − 1 they never add up. Streams' own
                // windows still bound each answer.
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Int(Int32.max) - 65_535))),
                    promise: nil)
                context.flush()
                for request in waiting { submit(request, context: context) }
            } else if !waitingForWindow.isEmpty {
                sendWaiting(context: context)
            }
        case .windowUpdate(let increment) where frame.streamID == .rootStream:
            connectionWindow += increment
            if !waitingForWindow.isEmpty { sendWaiting(context: context) }
        case .rstStream(let code):
            fail(frame.streamID, HTTP2ConnectionError.streamReset(code))
        case .goAway(let lastStreamID, _, _):
            // Streams above lastStreamID were not processed: they fail as `goingAway` and the pool
            // sends them again on a new connection. The rest finish; then the connection closes.
            isUsable = false
            for id in streams.keys where id > lastStreamID { fail(id, HTTP2ConnectionError.goingAway) }
            // Not sent yet: `send` fails each as going away, and the pool sends it again elsewhere.
            sendWaiting(context: context)
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
            stream.fail(HTTP2ConnectionError.malformedResponse)
            return
        }
        stream.answers.answer(
            stream.index,
            with: .success(
                HTTP2Response(
                    status: status, body: stream.body ?? ByteBuffer(), retryAfter: stream.retryAfter, elapsed: .now() - stream.startedAt)))
        if !waitingForWindow.isEmpty, let context { sendWaiting(context: context) }
        closeIfDrained()
    }

    private func closeIfDrained() {
        if !isUsable, streams.isEmpty, waitingForWindow.isEmpty { context?.close(promise: nil) }
    }

    private func fail(_ id: HTTP2StreamID, _ error: any Error) {
        streams.removeValue(forKey: id)?.fail(error)
        if !waitingForWindow.isEmpty, let context { sendWaiting(context: context) }
        closeIfDrained()
    }

    private func failAll(_ error: HTTP2ConnectionError) {
        let waiting = waitingForSettings ?? []
        waitingForSettings = nil
        for request in waiting { request.fail(error) }
        let held = waitingForWindow
        waitingForWindow.removeAll()
        for (request, _) in held { request.fail(error) }
        let pending = streams
        streams.removeAll()
        for stream in pending.values { stream.fail(error) }
    }
}
