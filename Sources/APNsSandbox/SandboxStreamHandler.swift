import Foundation
import NIOCore
import NIOHTTP1
import NostrProtocol

/// Serves one HTTP/2 stream (seen through NIO's HTTP/1 codec): a push to `/3/device/<token>`, or
/// one of the sandbox's own endpoints: `GET /deliveries[?after=N&status=S]`, `DELETE /deliveries`,
/// `GET /stats`, `GET /healthz`.
final class SandboxStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Bodies beyond this are not buffered: the answer is 413 either way.
    static let maxBufferedBody = 64 * 1024

    private let state: SandboxState
    private let connection: SandboxConnectionState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var counted = false

    init(state: SandboxState, connection: SandboxConnectionState) {
        self.state = state
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        state.observeStreams(connection.streamOpened())
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted { connection.streamClosed() }
        counted = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
        case .body(var buffer):
            if body.count <= Self.maxBufferedBody, let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body.append(contentsOf: bytes)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = String(head.uri.prefix { $0 != "?" })
        if APNsRequestValidator.deviceToken(inPath: path) == nil, let (status, json) = management(head, path: path) {
            write(status: status, body: json.serialized, context: context)
            return
        }
        let request = SandboxRequest(
            method: head.method.rawValue, path: head.uri, headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body)
        let reply = state.answer(request, on: connection)
        var extra: [(String, String)] = [("apns-id", request.header("apns-id") ?? UUID().uuidString)]
        var text: String?
        if let reason = reply.reason {
            var fields: [String: JSONValue] = ["reason": .string(reason)]
            if let timestamp = reply.timestampMilliseconds { fields["timestamp"] = .integer(timestamp) }
            text = JSONValue.object(fields).serialized
        } else {
            extra.append(("apns-unique-id", UUID().uuidString.lowercased()))
        }
        let latency = state.configuration.latencyMilliseconds
        let (headers, body) = (extra, text)
        if latency > 0 {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(latency))) {
                let (handler, context) = bound.value
                handler.write(status: reply.status, body: body, headers: headers, context: context)
            }
        } else {
            write(status: reply.status, body: text, headers: extra, context: context)
        }
    }

    private func management(_ head: HTTPRequestHead, path: String) -> (Int, JSONValue)? {
        let query = Self.query(head.uri)
        switch (head.method, path) {
        case (.GET, "/healthz"):
            return (200, ["status": "ok"])
        case (.GET, "/deliveries"):
            let records = state.records(after: query["after"].flatMap { Int($0) } ?? 0, status: query["status"].flatMap { Int($0) })
            return (200, .array(records.map(\.json)))
        case (.DELETE, "/deliveries"):
            state.reset()
            return (200, ["status": "reset"])
        case (.POST, "/control/max-streams"):
            guard let value = query["value"].flatMap({ Int($0) }), (1...100_000).contains(value) else {
                return (400, ["error": "value must be an integer in 1...100000"])
            }
            state.setMaxConcurrentStreams(value)
            return (200, ["max_concurrent_streams": .integer(Int64(value))])
        case (.GET, "/stats"):
            let stats = state.statistics
            var byStatus: [String: JSONValue] = [:]
            for (status, count) in stats.byStatus { byStatus[String(status)] = .integer(Int64(count)) }
            return (200, .object([
                "answered": .integer(Int64(stats.answered)), "by_status": .object(byStatus),
                "peak_concurrent_streams": .integer(Int64(stats.peakConcurrentStreams)),
                "max_concurrent_streams": .integer(Int64(state.maxConcurrentStreams)),
                "open_connections": .integer(Int64(stats.openConnections)),
            ]))
        default:
            return nil
        }
    }

    private func write(status: Int, body text: String?, headers extra: [(String, String)] = [], context: ChannelHandlerContext) {
        var headers = HTTPHeaders(extra)
        var buffer: ByteBuffer?
        if let text {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(text.utf8.count))
            buffer = context.channel.allocator.buffer(string: text)
        }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: status), headers: headers))), promise: nil)
        if let buffer { context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    static func query(_ uri: String) -> [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            result[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return result
    }
}
