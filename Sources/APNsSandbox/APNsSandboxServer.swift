public import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A running sandbox: HTTP/2 over TLS (ALPN `h2`) on `port`, advertising the configured
/// `SETTINGS_MAX_CONCURRENT_STREAMS` on every connection.
public final class APNsSandboxServer: Sendable {
    public let state: SandboxState
    public let certificate: SandboxCertificate
    /// The port actually bound (useful with `port: 0`).
    public let port: Int
    private let channel: any Channel

    /// Binds and starts serving.
    public static func start(configuration: SandboxConfiguration, certificate: SandboxCertificate, logger: Logger) async throws
        -> APNsSandboxServer
    {
        let state = try SandboxState(configuration: configuration)
        var tls = try certificate.serverTLSConfiguration()
        // h2 for APNs (and Web Push clients that speak it); http/1.1 for the Web Push face alone.
        tls.applicationProtocols = ["h2", "http/1.1"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let streamConfiguration = NIOHTTP2Handler.StreamConfiguration()

        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = SandboxConnectionState()
                    state.connectionOpened(channel)
                    channel.closeFuture.whenComplete { _ in state.connectionClosed(channel) }
                    // The current limit: it can change while the sandbox runs.
                    var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
                    // NIOHTTP2's generic checks of every header block, received and sent, were 14 %
                    // of the sandbox's CPU per push in a profile of the watch benchmark. A request's
                    // block is checked here in one pass instead (`HeaderBlockCheck`), and the
                    // answers are this server's own. Content lengths are still NIOHTTP2's to check.
                    connectionConfiguration.headerBlockValidation = .disabled
                    connectionConfiguration.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: state.maxConcurrentStreams),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 16 * 1024),
                    ]
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    // A client that names no protocol gets HTTP/2, as before (APNs clients do name it).
                    let negotiation = ApplicationProtocolNegotiationHandler { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            if case .negotiated("http/1.1") = result {
                                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                                try channel.pipeline.syncOperations.addHandler(HTTP1SandboxHandler(state: state))
                            } else {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOHTTP2Handler(
                                        mode: .server, connectionConfiguration: connectionConfiguration,
                                        streamConfiguration: streamConfiguration))
                                try channel.pipeline.syncOperations.addHandler(
                                    SandboxConnectionHandler(state: state, connection: connection))
                            }
                            try channel.pipeline.syncOperations.addHandler(ConnectionErrorHandler(logger: logger))
                        }
                    }
                    try channel.pipeline.syncOperations.addHandler(negotiation)
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        let port = channel.localAddress?.port ?? configuration.port
        logger.info(
            "APNs sandbox listening",
            metadata: [
                "host": "\(configuration.host)", "port": "\(port)", "max_concurrent_streams": "\(configuration.maxConcurrentStreams)",
                "jwt_check": "\(!configuration.providerKeys.isEmpty)",
            ])
        return APNsSandboxServer(state: state, certificate: certificate, port: port, channel: channel)
    }

    private init(state: SandboxState, certificate: SandboxCertificate, port: Int, channel: any Channel) {
        self.state = state
        self.certificate = certificate
        self.port = port
        self.channel = channel
    }

    /// Stops accepting connections and closes the deliveries file.
    public func close() async throws {
        try await channel.close()
        state.close()
    }
}

/// Closes a connection on a TLS or protocol error instead of leaving it half-open.
private final class ConnectionErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Any
    let logger: Logger
    init(logger: Logger) { self.logger = logger }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection error", metadata: ["error": "\(error)"])
        // A stream error concerns one stream, which NIOHTTP2Handler has already reset (for
        // example a stream the client opened after our GOAWAY): the connection goes on.
        if error is NIOHTTP2Errors.StreamError { return }
        context.close(promise: nil)
    }
}
