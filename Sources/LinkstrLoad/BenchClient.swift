import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import NostrProtocol

/// A minimal WebSocket client for the inbox relay benchmark: it writes each 10 ms tick's EVENT
/// messages as frames in one write and one flush, and hands every text message it receives to
/// `onText` with the time it arrived. Written on SwiftNIO's codec for the reason `BenchRelay` is:
/// it runs on the machine it measures, so its cost per event is taken from the gateway.
final class BenchClient: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `url` (`ws://host:port/path`) and upgrades; `onText` runs on the connection's
    /// event loop with each text message and when it arrived (ms since 1970).
    static func connect(to url: String, onText: @escaping @Sendable (ByteBuffer, Double) -> Void) async throws -> BenchClient {
        guard let components = URLComponents(string: url), components.scheme == "ws", let host = components.host,
            let port = components.port
        else { throw BenchClientError("expected ws://host:port/path, got \(url)") }
        let path = components.path.isEmpty ? "/" : components.path
        let upgraded = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                let upgrader = NIOWebSocketClientUpgrader(
                    requestKey: Base64.encode(SecureRandom.bytes(16)), maxFrameSize: 1 << 20,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandlers(
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: 1 << 20),
                                BenchClientHandler(onText: onText))
                            upgraded.succeed()
                        }
                    })
                return channel.eventLoop.makeCompletedFuture {
                    // Sends the upgrade request, and goes once the upgrade is done.
                    let request = UpgradeRequest(host: "\(host):\(port)", path: path)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(
                        withClientUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { context in context.pipeline.removeHandler(name: "upgrade-request", promise: nil) }
                        ))
                    try channel.pipeline.syncOperations.addHandler(request, name: "upgrade-request")
                }
            }
            .connect(host: host, port: port).get()
        channel.closeFuture.whenComplete { _ in upgraded.fail(BenchClientError("\(url) closed before the upgrade")) }
        try await upgraded.futureResult.get()
        return BenchClient(channel: channel)
    }

    /// Sends `messages` as masked text frames in one write and one flush.
    func send(_ messages: [ByteBuffer]) {
        let channel = self.channel
        channel.eventLoop.execute {
            for message in messages {
                channel.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: message), promise: nil)
            }
            channel.flush()
        }
    }

    func close() async {
        try? await channel.close()
    }

    /// Sends the upgrade request once the connection is up.
    private final class UpgradeRequest: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        let host: String
        let path: String

        init(host: String, path: String) {
            self.host = host
            self.path = path
        }

        func channelActive(context: ChannelHandlerContext) {
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: host)
            headers.add(name: "Content-Length", value: "0")
            context.write(
                wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            context.fireChannelActive()
        }
    }

    /// After the upgrade: text messages to `onText`, pings answered.
    private final class BenchClientHandler: ChannelInboundHandler {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        let onText: @Sendable (ByteBuffer, Double) -> Void

        init(onText: @escaping @Sendable (ByteBuffer, Double) -> Void) { self.onText = onText }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.opcode {
            case .text:
                onText(frame.unmaskedData, Date().timeIntervalSince1970 * 1000)
            case .ping:
                context.writeAndFlush(
                    wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)), promise: nil)
            case .connectionClose:
                context.close(promise: nil)
            default:
                break
            }
        }
    }
}

struct BenchClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
