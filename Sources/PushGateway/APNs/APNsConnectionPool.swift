import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// Long-lived HTTP/2 connections to APNs hosts: `connectionsPerHost` per host, each on its own
/// event loop (one connection's TLS and HTTP/2 work runs on one thread), a request always on the
/// slot its caller picks. A connection that closed, received GOAWAY or failed is replaced at the
/// next request; a request refused before it was sent (the connection was going away) is moved
/// to a fresh connection once.
final class APNsConnectionPool: Sendable {
    struct Endpoint: Hashable, Sendable {
        var host: String
        var port: Int

        /// `https://host[:port]`.
        init?(url: String) {
            guard url.lowercased().hasPrefix("https://") else { return nil }
            let rest = url.dropFirst(8).prefix { $0 != "/" }
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]"), let port = Int(rest[rest.index(after: colon)...]) {
                host = String(rest[..<colon])
                self.port = port
            } else {
                host = String(rest)
                port = 443
            }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
        }

        /// `:authority`: the host, with the port when it is not 443.
        var authority: String { port == 443 ? host : "\(host.contains(":") ? "[\(host)]" : host):\(port)" }
        /// SNI is for names only, never address literals.
        var serverName: String? { host.allSatisfy { $0.isNumber || $0 == "." } || host.contains(":") ? nil : host }
    }

    private enum Slot {
        case connecting(id: Int, EventLoopFuture<any Channel>)
        case connected(id: Int, any Channel)

        var future: EventLoopFuture<any Channel> {
            switch self {
            case .connecting(_, let future): future
            case .connected(_, let channel): channel.eventLoop.makeSucceededFuture(channel)
            }
        }
    }

    private let sslContext: NIOSSLContext
    private let group: any EventLoopGroup
    private let connectionsPerHost: Int
    private let requestTimeout: TimeAmount
    private let slots = Mutex<(attempts: Int, byEndpoint: [Endpoint: [Slot?]])>((0, [:]))

    init(tls: TLSConfiguration, connectionsPerHost: Int, requestTimeout: TimeAmount = .seconds(30),
         group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        sslContext = try NIOSSLContext(configuration: tls)
        self.group = group
        self.connectionsPerHost = max(1, connectionsPerHost)
        self.requestTimeout = requestTimeout
    }

    /// Sends one request on connection `slot` (modulo the count) to `endpoint`.
    func send(_ endpoint: Endpoint, slot: Int, headers: HPACKHeaders, body: ByteBuffer) async throws -> APNsStreamResponse {
        do {
            return try await attempt(endpoint, slot: slot, headers: headers, body: body)
        } catch APNsConnectionError.goingAway {
            // Refused before sending: the connection had received GOAWAY. A fresh one takes it.
            return try await attempt(endpoint, slot: slot, headers: headers, body: body)
        }
    }

    private func attempt(_ endpoint: Endpoint, slot: Int, headers: HPACKHeaders, body: ByteBuffer) async throws -> APNsStreamResponse {
        let channel = try await channel(endpoint, slot: slot % connectionsPerHost).get()
        let promise = channel.eventLoop.makePromise(of: APNsStreamResponse.self)
        channel.writeAndFlush(APNsStreamRequest(headers: headers, body: body, promise: promise), promise: nil)
        return try await promise.futureResult.get()
    }

    private func channel(_ endpoint: Endpoint, slot index: Int) -> EventLoopFuture<any Channel> {
        slots.withLock { state in
            var list = state.byEndpoint[endpoint] ?? Array(repeating: nil, count: connectionsPerHost)
            switch list[index] {
            case .connecting(_, let future):
                return future
            case .connected(_, let channel) where channel.isActive:
                return channel.eventLoop.makeSucceededFuture(channel)
            default:
                state.attempts += 1
                let id = state.attempts
                let future = connect(endpoint)
                list[index] = .connecting(id: id, future)
                state.byEndpoint[endpoint] = list
                future.whenComplete { [weak self] result in
                    self?.settle(endpoint, index, id, result)
                }
                return future
            }
        }
    }

    /// A connect finished: keep the channel (so later requests need no future), or forget the
    /// failed attempt so the next request connects again.
    private func settle(_ endpoint: Endpoint, _ index: Int, _ id: Int, _ result: Result<any Channel, any Error>) {
        slots.withLock { state in
            guard case .connecting(let current, _)? = state.byEndpoint[endpoint]?[index], current == id else { return }
            switch result {
            case .success(let channel): state.byEndpoint[endpoint]?[index] = .connected(id: id, channel)
            case .failure: state.byEndpoint[endpoint]?[index] = nil
            }
        }
    }

    private func connect(_ endpoint: Endpoint) -> EventLoopFuture<any Channel> {
        let sslContext = self.sslContext
        let timeout = requestTimeout
        return ClientBootstrap(group: group.next())
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: endpoint.serverName)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
                    try channel.pipeline.syncOperations.addHandler(APNsStreamHandler(requestTimeout: timeout))
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
    }

    /// Closes every connection (in-flight requests fail).
    func shutdown() async {
        let futures = slots.withLock { state in
            defer { state.byEndpoint.removeAll() }
            return state.byEndpoint.values.flatMap { $0.compactMap { $0?.future } }
        }
        for future in futures {
            if let channel = try? await future.get() { try? await channel.close() }
        }
    }
}
