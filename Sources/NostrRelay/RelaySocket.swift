import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import NostrProtocol

/// A client WebSocket (RFC 6455) to one relay, written on SwiftNIO's codec rather than a
/// WebSocket library so that the caller decides which address it connects to: a relay URL a
/// user supplied is connected to at the very addresses its host was judged by
/// (`RelayAddressPolicy`), while TLS (SNI and certificate name) and the HTTP `Host` still name the
/// host. A second lookup at connect time could answer differently (DNS rebinding) and lead the
/// connection into the gateway's own network.
///
/// Text and binary messages are reassembled from their fragments up to `maxMessageBytes`; pings
/// are answered as they are read (while the relay reads what it is sent); a ping is sent every
/// `pingInterval`, and a relay that has not answered the previous one by then is hung up on. The TCP connection and the TLS and HTTP
/// handshakes, to every address tried, have one `handshakeTimeout` together, so a relay that
/// accepts and never answers cannot hold a connection attempt.
struct RelaySocket {
    struct Options: Sendable {
        var maxMessageBytes: Int
        var pingInterval: Duration
        /// How long a close handshake waits for the relay's close frame.
        var closeTimeout: Duration
        var handshakeTimeout: Duration
        /// Needed for `wss` URLs (`tlsContext(trusting:)`).
        var tlsContext: NIOSSLContext?
    }

    /// A data message from the relay.
    enum Message: Sendable {
        case text(String)
        /// Nostr relays send text; a binary message is kept only as its size.
        case binary(bytes: Int)
    }

    /// What went wrong below the Nostr protocol.
    enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The server answered the upgrade request with something other than a WebSocket.
        case notUpgraded
        case handshakeTimedOut
        case pingTimedOut
        /// A fragment or control frame RFC 6455 does not allow.
        case protocolError(String)

        var description: String {
            switch self {
            case .notUpgraded: "the server did not accept the WebSocket upgrade"
            case .handshakeTimedOut: "the connection or its handshake timed out"
            case .pingTimedOut: "the relay did not answer a ping in time"
            case .protocolError(let what): "WebSocket protocol error: \(what)"
            }
        }
    }

    private enum Upgrade: Sendable {
        case webSocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused
    }

    /// TLS contexts by the extra roots they trust (none: the system's alone), shared by every
    /// connection that trusts the same: building one reads the system's trust store. Built at the
    /// first `wss` connection, and again after a failure (a trust store being replaced). The
    /// roots come from configuration, so there are one or two.
    private static let tlsContexts = Locked<[[String]: NIOSSLContext]>([:])

    /// The TLS context for connections that trust the system's roots and `additionalRoots` (PEM).
    static func tlsContext(trusting additionalRoots: [String]) throws -> NIOSSLContext {
        try tlsContexts.withLock { contexts in
            if let shared = contexts[additionalRoots] { return shared }
            var configuration = TLSConfiguration.makeClientConfiguration()
            if !additionalRoots.isEmpty {
                configuration.additionalTrustRoots = [
                    .certificates(try additionalRoots.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) })
                ]
            }
            let context = try NIOSSLContext(configuration: configuration)
            contexts[additionalRoots] = context
            return context
        }
    }

    /// At most this many of a name's addresses are tried per attempt: a name server answering
    /// dozens would otherwise only add connections to the attempt, all within its one deadline.
    static let maxAddressesTried = 8

    /// Connects to `url`, at `addresses` in turn until one answers (nil: wherever the system's
    /// lookup of its host leads), runs `body` with the relay's messages and a writer, then closes
    /// with a close handshake. What `body` throws is rethrown; a relay that closes ends the
    /// messages.
    static func run(
        url: RelayURL, addresses: [IPAddress]?, options: Options,
        body: @escaping @Sendable (RelaySocketMessages, RelaySocketWriter) async throws -> Void
    ) async throws {
        let channel = try await connect(url: url, addresses: addresses, options: options)
        try await withTaskCancellationHandler {
            try await channel.executeThenClose { inbound, outbound in
                let link = RelaySocketLink(channel: channel.channel, outbound: outbound)
                let messages = RelaySocketMessages(inbound: inbound.makeAsyncIterator(), link: link)
                let writer = RelaySocketWriter(link: link)
                let ended: (any Error)?
                do {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await link.pingLoop(every: options.pingInterval) }
                        group.addTask { try await body(messages, writer) }
                        // Either ending ends the connection: the body by returning or throwing,
                        // the ping loop only by throwing.
                        try await group.next()
                        group.cancelAll()
                    }
                    ended = nil
                } catch {
                    ended = error
                }
                await link.close(code: closeCode(for: ended), draining: messages, within: options.closeTimeout)
                if let ended { throw ended }
            }
        } onCancel: {
            // Stopping: no close handshake, the reader is woken by the channel closing.
            channel.channel.close(promise: nil)
        }
    }

    /// What our close frame says about why the connection ends.
    private static func closeCode(for ended: (any Error)?) -> WebSocketErrorCode {
        switch ended {
        case nil: .normalClosure
        case Failure.protocolError?: .protocolError
        case is CancellationError: .goingAway
        default: .policyViolation
        }
    }

    /// The TCP connection, TLS and the upgrade, to each address in turn, all within one
    /// `handshakeTimeout`.
    private static func connect(
        url: RelayURL, addresses: [IPAddress]?, options: Options
    ) async throws -> NIOAsyncChannel<WebSocketFrame, WebSocketFrame> {
        let port = url.port ?? (url.isSecure ? 443 : 80)
        let deadline = NIODeadline.now() + TimeAmount(options.handshakeTimeout)
        func attempt(_ connect: (ClientBootstrap, @escaping Initializer) async throws -> EventLoopFuture<Upgrade>) async throws -> Upgrade {
            try Task.checkCancellation()
            let remaining = deadline - .now()
            guard remaining > .zero else { throw Failure.handshakeTimedOut }
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(remaining)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
            do {
                return try await connect(bootstrap) { channel in
                    channel.eventLoop.makeCompletedFuture { try setUp(channel, url: url, deadline: deadline, options: options) }
                }.get()
            } catch {
                // The deadline closes the channel, which NIO reports as whatever the closing
                // interrupted (a connect, the TLS handshake, the upgrade).
                throw NIODeadline.now() >= deadline ? Failure.handshakeTimedOut : error
            }
        }
        let upgrade: Upgrade
        if let addresses {
            var lastError: any Error = RelayError.noAddress
            var upgraded: Upgrade?
            for address in addresses.prefix(maxAddressesTried) {
                do {
                    let socketAddress = try SocketAddress(ipAddress: address.description, port: port)
                    upgraded = try await attempt { try await $0.connect(to: socketAddress, channelInitializer: $1) }
                    break
                } catch Failure.handshakeTimedOut {
                    throw Failure.handshakeTimedOut
                } catch let cancelled as CancellationError {
                    throw cancelled
                } catch {
                    lastError = error
                }
            }
            guard let upgraded else { throw lastError }
            upgrade = upgraded
        } else {
            upgrade = try await attempt { try await $0.connect(host: url.host.description, port: port, channelInitializer: $1) }
        }
        switch upgrade {
        case .webSocket(let channel): return channel
        case .refused: throw Failure.notUpgraded
        }
    }

    private typealias Initializer = @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<Upgrade>>

    /// TLS when the URL asks for it, then the HTTP upgrade request; once upgraded, fragments are
    /// reassembled before the frames reach the async channel.
    private static func setUp(
        _ channel: any Channel, url: RelayURL, deadline: NIODeadline, options: Options
    ) throws -> EventLoopFuture<Upgrade> {
        let pipeline = channel.pipeline.syncOperations
        if url.isSecure {
            // A name is both the SNI and the name the certificate must carry; for an IP literal
            // (which SNI cannot carry) NIOSSL checks the certificate against the address.
            let serverName: String? = if case .name(let name) = url.host { name } else { nil }
            guard let tlsContext = options.tlsContext else { throw RelayError.protocolViolation("no TLS context for a wss URL") }
            try pipeline.addHandler(NIOSSLClientHandler(context: tlsContext, serverHostname: serverName))
        }
        let maxMessageBytes = options.maxMessageBytes
        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
            maxFrameSize: maxMessageBytes, enableAutomaticErrorHandling: false,
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    // Fragments are few and not tiny: each pins the read buffer it came in until
                    // its message is complete, so a thousand empty ones could pin megabytes.
                    try channel.pipeline.syncOperations.addHandlers(
                        RelaySocketFrameCheck(),
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 256, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: maxMessageBytes))
                    return .webSocket(try NIOAsyncChannel(wrappingChannelSynchronously: channel))
                }
            })
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: url.host.description + (url.port.map { ":\($0)" } ?? ""))
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery, headers: headers)
        var configuration = NIOUpgradableHTTPClientPipelineConfiguration<Upgrade>(
            upgradeConfiguration: .init(
                upgradeRequestHead: head, upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(.refused) }))
        // A relay may send its first frames (an AUTH challenge) in the same packet as its answer
        // to the upgrade; they belong to the WebSocket, not to the HTTP decoder being removed.
        configuration.leftOverBytesStrategy = .forwardBytes
        let upgrade = try pipeline.configureUpgradableHTTPClientPipeline(configuration: configuration)
        // The deadline covers TLS and the upgrade's answer as well as the TCP connection.
        let timeout = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        return upgrade.always { result in
            timeout.cancel()
            // Anything but a WebSocket leaves nobody to close the socket (a relay answering
            // `200 OK` and holding the connection open would keep it).
            if case .success(.webSocket) = result {} else { channel.close(promise: nil) }
        }
    }
}
