import Foundation
import NIOCore
import NIOHTTP1
import NostrProtocol

/// HTTP/1.1 on the sandbox's port, for the Web Push and FCM faces: those services take HTTP/1.1
/// (pywebpush and firebase-admin send it), APNs does not, so anything outside them is answered
/// 505 as Apple's servers would refuse it.
final class HTTP1SandboxHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let state: SandboxState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// A Web Push message is at most 4 KB; anything much larger is refused without being kept.
    static let maxBody = 64 * 1024

    init(state: SandboxState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body = []
        case .body(var buffer):
            if body.count + buffer.readableBytes <= Self.maxBody, let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let mark = head.uri.firstIndex(of: "?")
        let path = mark.map { String(head.uri[..<$0]) } ?? head.uri
        let query = mark.map { SandboxConnectionHandler.query(head.uri[$0...].dropFirst()) } ?? [:]
        let status: Int, text: String?, extra: [(String, String)]
        if let face = state.face(for: path) {
            let headers = head.headers.map { (name: $0.name.lowercased(), value: $0.value) }
            let answer = face.answer(
                method: head.method.rawValue, path: path, query: query, headers: headers, body: body,
                authority: head.headers.first(name: "host") ?? "", now: Date())
            // A scripted stall: the request stays unanswered.
            guard answer.status != SandboxFaces.noAnswer else { return }
            (status, text, extra) = (answer.status, answer.json?.serialized, answer.headers)
        } else {
            (status, text, extra) = (505, #"{"reason":"APNs requires HTTP/2"}"#, [])
        }
        var headers = HTTPHeaders(extra)
        headers.add(name: "content-length", value: String(text?.utf8.count ?? 0))
        if text != nil { headers.add(name: "content-type", value: "application/json") }
        let response = HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if let text { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
