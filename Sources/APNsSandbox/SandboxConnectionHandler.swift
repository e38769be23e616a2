import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NostrProtocol

/// Serves one HTTP/2 connection straight on `NIOHTTP2Handler` frames, with no channel per stream:
/// a stream's HEADERS and DATA frames are collected by stream id and answered with a HEADERS
/// frame (and a DATA frame for a body) on the same stream, and the answers of one read burst go
/// out in one flush. Requests are pushes to `/3/device/<token>`, or one of the sandbox's own
/// endpoints: `GET /deliveries[?after=N&status=S]`, `DELETE /deliveries`, `GET /stats`,
/// `GET /healthz`, `POST /control/max-streams?value=N`, `POST /control/goaway?after=N`.
///
/// A channel and an HTTP/1 codec per stream cost about half of the sandbox's CPU per push; with
/// the sandbox on the same machine as the gateway in the benchmarks, that was CPU the gateway did
/// not get. Without a multiplexer nobody returns flow-control credit either, so this handler
/// does, for the connection and for a stream whose body spans frames.
final class SandboxConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Bodies beyond this are not buffered: the answer is 413 either way.
    static let maxBufferedBody = 64 * 1024
    /// Connection-level credit is returned once this much was received.
    static let windowUpdateThreshold = 16 * 1024

    private struct OpenStream {
        var headers: HPACKHeaders
        var body: [UInt8] = []
        /// False once the request is complete and its answer is on its way (possibly delayed).
        var receiving = true
    }

    private let state: SandboxState
    private let connection: SandboxConnectionState
    private var streams: [HTTP2StreamID: OpenStream] = [:]
    private var unacknowledgedBytes = 0
    private var needsFlush = false
    /// The highest stream whose request was answered (or is being answered). A client's DATA
    /// frames need not arrive in stream order, so it may be above the newest push's stream.
    private var highestProcessedStreamID = HTTP2StreamID.rootStream
    /// Set once this connection sent GOAWAY: streams above it are ignored.
    private var goAwayLastStreamID: HTTP2StreamID?
    private var answerIDs = AnswerIDs()

    init(state: SandboxState, connection: SandboxConnectionState) {
        self.state = state
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if let last = goAwayLastStreamID, id > last {
                // Opened after our GOAWAY: not processed (RFC 9113 §6.8), so never answered.
                return
            }
            if streams[id] == nil {
                streams[id] = OpenStream(headers: headers.headers)
                state.observeStreams(connection.streamOpened())
                // Decided when a push's stream opens, before its request is complete: a client
                // sends a burst's HEADERS ahead of its DATA, so the streams after the last
                // answered one, this one included, are in flight and will be refused.
                if goAwayLastStreamID == nil, headers.headers.first(name: ":path")?.hasPrefix("/3/device/") == true,
                    state.pushTriggersGoAway()
                {
                    goAway(lastStreamID: highestProcessedStreamID, context: context)
                    return
                }
            } // else trailers: APNs requests carry none, and nothing here reads them
            if headers.endStream { complete(id, context: context) }
        case .data(let payload):
            let received = payload.data.readableBytes + (payload.paddingBytes ?? 0)
            returnCredit(received, on: id, endStream: payload.endStream, context: context)
            if case .byteBuffer(let bytes) = payload.data, streams[id]?.receiving == true,
                let count = streams[id]?.body.count, count <= Self.maxBufferedBody
            {
                bytes.withUnsafeReadableBytes { streams[id]?.body.append(contentsOf: $0) }
            }
            if payload.endStream { complete(id, context: context) }
        case .rstStream:
            if streams.removeValue(forKey: id) != nil { connection.streamClosed() }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    /// After this side's GOAWAY a server ignores the client's frames on streams above its last
    /// stream id (RFC 9113 §6.8), and keeps answering the streams below it. NIOHTTP2 refuses such a
    /// stream's HEADERS as it should, but takes the DATA that follows them for a protocol error on
    /// an idle stream, and then fails to send a GOAWAY of its own (its last stream id would be
    /// above ours). A client that writes each request's HEADERS and DATA together meets this
    /// whenever a GOAWAY lands mid-burst; neither error may close the connection here, which would
    /// lose the answers still due and the GOAWAY itself.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let last = goAwayLastStreamID {
            if let idle = error as? NIOHTTP2Errors.NoSuchStream, idle.streamID > last { return }
            if error is NIOHTTP2Errors.RaisedGoawayLastStreamID { return }
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for _ in streams { connection.streamClosed() }
        streams.removeAll()
        context.fireChannelInactive()
    }

    /// Hands received bytes back to the client (RFC 9113 §6.9): on the connection in batches, and
    /// on a stream that is still sending, so a body above the initial window can finish.
    private func returnCredit(_ bytes: Int, on id: HTTP2StreamID, endStream: Bool, context: ChannelHandlerContext) {
        guard bytes > 0 else { return }
        unacknowledgedBytes += bytes
        if unacknowledgedBytes >= Self.windowUpdateThreshold {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                promise: nil)
            unacknowledgedBytes = 0
            needsFlush = true
        }
        if !endStream, streams[id]?.receiving == true {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: bytes))), promise: nil)
            needsFlush = true
        }
    }

    /// The request on `id` is complete: answer it.
    private func complete(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard var stream = streams[id], stream.receiving else { return }
        stream.receiving = false
        streams[id] = stream
        // A malformed request (RFC 9113 §8.2, §8.3) gets its stream reset, as NIOHTTP2 resets it
        // when it checks header blocks (which this server has it skip: `HeaderBlockCheck`).
        if HeaderBlockCheck.problem(in: stream.headers) != nil {
            reset(id, context: context)
            return
        }
        var method = "", path = "", authority = ""
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(stream.headers.count)
        for (name, value, _) in stream.headers {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case ":authority": authority = value
            case _ where name.utf8.first == UInt8(ascii: ":"): continue
            default: fields.append((name, value))
            }
        }
        // A byte scan: `String.firstIndex(of: Character)` walks grapheme clusters, 5 % of the
        // sandbox's CPU per push in a profile of the watch benchmark.
        let mark = path.utf8.firstIndex(of: UInt8(ascii: "?"))
        let query = mark.map { Self.query(path[$0...].dropFirst()) } ?? [:]
        let plainPath = mark.map { String(path[..<$0]) } ?? path
        if let face = state.face(for: plainPath) {
            let (status, json, headers) = face.answer(
                method: method, path: plainPath, query: query, headers: fields, body: stream.body, authority: authority, now: Date())
            highestProcessedStreamID = max(highestProcessedStreamID, id)
            // A scripted stall: the stream stays open, unanswered.
            guard status != SandboxFaces.noAnswer else { return }
            write(id, status: status, body: json?.serialized, headers: headers, context: context)
            return
        }
        if APNsRequestValidator.deviceToken(inPath: plainPath) == nil,
            let (status, json) = management(method: method, path: plainPath, query: query)
        {
            write(id, status: status, body: json.serialized, context: context)
            return
        }
        let request = SandboxRequest(method: method, path: path, headers: fields, body: stream.body)
        let reply = state.answer(request, on: connection)
        highestProcessedStreamID = max(highestProcessedStreamID, id)
        // The request's apns-id comes back only when it is one (a refused one could hold anything).
        let apnsID = request.header("apns-id").flatMap { APNsRequestValidator.isUUID($0) ? $0 : nil } ?? UUID().uuidString
        var extra: [(String, String)] = [("apns-id", apnsID)]
        var text: String?
        if let reason = reply.reason {
            var fields: [String: JSONValue] = ["reason": .string(reason)]
            if let timestamp = reply.timestampMilliseconds { fields["timestamp"] = .integer(timestamp) }
            text = JSONValue.object(fields).serialized
        } else {
            extra.append(("apns-unique-id", answerIDs.next()))
        }
        let latency = state.configuration.latencyMilliseconds
        guard latency > 0 else {
            write(id, status: reply.status, body: text, headers: extra, context: context)
            return
        }
        let (headers, body) = (extra, text)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(Int64(latency))) {
            let (handler, context) = bound.value
            handler.write(id, status: reply.status, body: body, headers: headers, context: context)
            handler.flushIfNeeded(context: context)
        }
    }

    /// Sends GOAWAY: `lastStreamID` (the highest processed stream) and the streams before it are
    /// answered; newer streams, whose
    /// HEADERS a client sends ahead of a burst's DATA, are dropped unanswered. NIOHTTP2Handler
    /// drops them on its side too (and ignores their DATA), and refuses streams opened later.
    private func goAway(lastStreamID: HTTP2StreamID, context: ChannelHandlerContext) {
        goAwayLastStreamID = lastStreamID
        for id in streams.keys where id > lastStreamID {
            streams.removeValue(forKey: id)
            connection.streamClosed()
        }
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))),
            promise: nil)
        needsFlush = true
        state.goAwaySent()
    }

    /// Resets stream `id` (PROTOCOL_ERROR) instead of answering it.
    private func reset(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard streams.removeValue(forKey: id) != nil else { return }
        connection.streamClosed()
        highestProcessedStreamID = max(highestProcessedStreamID, id)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError))), promise: nil)
        needsFlush = true
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
    }

    private func management(method: String, path: String, query: [String: String]) -> (Int, JSONValue)? {
        switch (method, path) {
        case ("GET", "/healthz"):
            return (200, ["status": "ok"])
        case ("GET", "/deliveries"):
            let records = state.records(after: query["after"].flatMap { Int($0) } ?? 0, status: query["status"].flatMap { Int($0) })
            return (200, .array(records.map(\.json)))
        case ("DELETE", "/deliveries"):
            state.reset()
            return (200, ["status": "reset"])
        case ("POST", "/control/max-streams"):
            guard let value = query["value"].flatMap({ Int($0) }), (1...100_000).contains(value) else {
                return (400, ["error": "value must be an integer in 1...100000"])
            }
            state.setMaxConcurrentStreams(value)
            return (200, ["max_concurrent_streams": .integer(Int64(value))])
        case ("POST", "/control/goaway"):
            guard let after = query["after"].flatMap({ Int($0) }), (1...1_000_000).contains(after) else {
                return (400, ["error": "after must be an integer in 1...1000000"])
            }
            state.scheduleGoAway(afterPushes: after)
            return (200, ["goaway_after_pushes": .integer(Int64(after))])
        case ("GET", "/stats"):
            let stats = state.statistics
            var byStatus: [String: JSONValue] = [:]
            for (status, count) in stats.byStatus { byStatus[String(status)] = .integer(Int64(count)) }
            return (
                200,
                .object([
                    "answered": .integer(Int64(stats.answered)), "by_status": .object(byStatus),
                    "peak_concurrent_streams": .integer(Int64(stats.peakConcurrentStreams)),
                    "max_concurrent_streams": .integer(Int64(state.maxConcurrentStreams)),
                    "open_connections": .integer(Int64(stats.openConnections)),
                    "goaways_sent": .integer(Int64(stats.goAwaysSent)),
                ])
            )
        default:
            return nil
        }
    }

    /// The answer on `id`: a HEADERS frame, plus a DATA frame when there is a body. Flushed at the
    /// end of the read burst (or by the delayed-answer timer).
    private func write(
        _ id: HTTP2StreamID, status: Int, body text: String?, headers extra: [(String, String)] = [], context: ChannelHandlerContext
    ) {
        // A stream the client reset meanwhile gets no answer.
        guard streams.removeValue(forKey: id) != nil else { return }
        connection.streamClosed()
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(status))
        // apns-id and apns-unique-id are unique to the answer: kept out of the HPACK dynamic table.
        for (name, value) in extra { headers.add(name: name, value: value, indexing: .nonIndexable) }
        if let text {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(text.utf8.count))
        }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: text == nil)))), promise: nil)
        if let text {
            let buffer = context.channel.allocator.buffer(string: text)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))), promise: nil)
        }
        needsFlush = true
    }

    static func query(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            // Empty parts kept: `=` alone is an empty name, not a missing one.
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            result[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return result
    }
}
