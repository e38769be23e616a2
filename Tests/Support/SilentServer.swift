import NIOCore
import NIOPosix
import NostrProtocol

/// A TCP server on loopback that does not speak WebSocket: left alone it accepts connections and
/// never reads or answers (a relay that stalls a client's handshake); given an `answer`, it sends
/// that to every connection, reads and drops what comes, and keeps the connection open (an HTTP
/// server where a relay should be).
public final class SilentServer: Sendable {
    private struct Counts {
        var accepted = 0
        var open = 0
    }

    public let port: Int
    private let channel: any Channel
    private let counts: Locked<Counts>

    private init(port: Int, channel: any Channel, counts: Locked<Counts>) {
        self.port = port
        self.channel = channel
        self.counts = counts
    }

    /// Connections accepted so far.
    public var accepted: Int { counts.withLock { $0.accepted } }
    /// Connections the client has not closed (counted only with an `answer`, since only then is
    /// the socket read, and a close noticed).
    public var open: Int { counts.withLock { $0.open } }

    public static func start(answer: String? = nil) async throws -> SilentServer {
        let counts = Locked(Counts())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: answer != nil)
            .childChannelInitializer { channel in
                counts.withLock {
                    $0.accepted += 1
                    $0.open += 1
                }
                channel.closeFuture.whenComplete { _ in counts.withLock { $0.open -= 1 } }
                guard let answer else { return channel.eventLoop.makeSucceededVoidFuture() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Answering(answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentServer(port: channel.localAddress?.port ?? 0, channel: channel, counts: counts)
    }

    public func stop() async {
        try? await channel.close()
    }

    private final class Answering: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let answer: String

        init(answer: String) { self.answer = answer }

        func channelActive(context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
