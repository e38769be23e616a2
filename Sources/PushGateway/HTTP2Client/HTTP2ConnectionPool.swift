import Foundation
package import NIOCore
package import NIOHPACK
import NIOHTTP2
import NIOPosix
package import NIOSSL
import NostrProtocol

/// Long-lived HTTP/2 connections to push services' hosts (APNs, FCM): `connectionsPerHost` per host, each on its own
/// event loop (one connection's TLS and HTTP/2 work runs on one thread), a request always on the
/// slot its caller picks. A connection that closed, received GOAWAY or failed is replaced at the
/// next request; a request refused before it was sent (the connection was going away) is moved
/// to a fresh connection once.
package final class HTTP2ConnectionPool: APNsTransport {
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
    private let slots = Locked<(attempts: Int, byEndpoint: [HTTPSEndpoint: [Slot?]])>((0, [:]))
    /// NIOHTTP2's settings for every connection.
    /// - Header validation is off: the request headers are built here from validated parts, and
    ///   checking every name and value again cost ~2 % of the gateway's CPU per push.
    /// - NIOHTTP2 takes a frame for a stream it reset as a connection error unless the stream is
    ///   among the last `maximumRecentlyResetStreams` it reset (32 by default). A round cut at its
    ///   deadline resets every stream it still has open, up to the server's stream limit (1,000 or
    ///   more at APNs), and their answers may already be on the way: remembering fewer would let
    ///   one late answer close the connection and fail every other request on it.
    /// - The initial settings leave `SETTINGS_INITIAL_WINDOW_SIZE` alone: `HTTP2StreamHandler`
    ///   opens the connection's receive window from 65,535, NIOHTTP2's starting figure without it.
    static let http2: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.headerBlockValidation = .disabled
        configuration.maximumRecentlyResetStreams = 4_096
        return configuration
    }()

    /// How long a new connection may take to connect (TCP) before its requests fail.
    package static let connectTimeout: TimeAmount = .seconds(10)
    /// Told how many requests a GOAWAY refused and were sent again on a fresh connection.
    private let onResend: (@Sendable (Int) -> Void)?

    package init(
        tls: TLSConfiguration, connectionsPerHost: Int, requestTimeout: TimeAmount = .seconds(30),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, onResend: (@Sendable (Int) -> Void)? = nil
    ) throws {
        self.onResend = onResend
        var tls = tls
        tls.applicationProtocols = ["h2"]
        sslContext = try NIOSSLContext(configuration: tls)
        self.group = group
        self.connectionsPerHost = max(1, connectionsPerHost)
        self.requestTimeout = requestTimeout
    }

    func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        try await send(request.endpoint, slot: request.slot, headers: Self.headers(request), body: request.body)
    }

    /// A delivery round: the requests for each connection are written in one hop onto its event
    /// loop and flushed once (one TLS record write for many streams, instead of a cross-thread
    /// wake-up and a write per request), and the caller waits once per connection. Requests
    /// refused because their connection was going away are sent again, together, on fresh ones.
    func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Response, any Error>] {
        await send(requests, answeredBy: nil)
    }

    /// The same, with each request still unanswered at `deadline` failing then as `timedOut`, on
    /// its own: its stream is reset (RST_STREAM CANCEL) or, not sent yet, it never is; the
    /// requests answered before it keep their answers, and the connection goes on.
    package func send(_ requests: [HTTP2Request], answeredBy deadline: NIODeadline?) async -> [Result<HTTP2Response, any Error>] {
        var results = [Result<HTTP2Response, any Error>](repeating: .failure(HTTP2ConnectionError.closed), count: requests.count)
        let refused = await round(requests, Array(requests.indices), deadline: deadline, into: &results)
        guard !refused.isEmpty else { return results }
        onResend?(refused.count)
        // Refused again on a fresh connection: given up (retried later, like any connection failure).
        for index in await round(requests, refused, deadline: deadline, into: &results) {
            results[index] = .failure(HTTP2ConnectionError.goingAway)
        }
        return results
    }

    /// Sends `requests[indexes]` in one round, each connection's share in one hop, and returns
    /// the indexes refused as going away (their connections leave their slots).
    private func round(
        _ requests: [HTTP2Request], _ indexes: [Int], deadline: NIODeadline?, into results: inout [Result<HTTP2Response, any Error>]
    ) async -> [Int] {
        var groups: [ConnectionKey: [Int]] = [:]
        for index in indexes {
            let request = requests[index]
            groups[ConnectionKey(endpoint: request.endpoint, slot: request.slot % connectionsPerHost), default: []].append(index)
        }
        // Every connection this round needs is asked for first, so that new ones connect at once,
        // not one after the other.
        let connecting = groups.map { key, indexes in (key, indexes, channel(key.endpoint, slot: key.slot)) }
        var pending: [(key: ConnectionKey, channel: any Channel, indexes: [Int], answers: HTTP2RoundAnswers)] = []
        for (key, indexes, future) in connecting {
            let channel: any Channel
            do {
                channel = try await future.get()
            } catch {
                for index in indexes { results[index] = .failure(error) }
                continue
            }
            // The share's answers come back together (one promise for the round, not one per
            // request). Not shared with the event loop until the `execute` below.
            let answers = HTTP2RoundAnswers(count: indexes.count, on: channel.eventLoop)
            let batch = indexes.enumerated().map { position, index in
                HTTP2StreamRequest(
                    headers: Self.headers(requests[index]), body: requests[index].body, answers: answers, index: position,
                    deadline: deadline)
            }
            channel.eventLoop.execute {
                if let deadline {
                    // One timer for the round's share of this connection: at the deadline the
                    // handler cuts whatever is still unanswered. The last answer cancels it.
                    answers.cut = channel.eventLoop.scheduleTask(deadline: deadline) {
                        channel.triggerUserOutboundEvent(HTTP2StreamHandler.CutExpiredRequests(), promise: nil)
                    }
                }
                // The connection's share in one write: one pipeline hop and one write promise for
                // the round, not one per request. A write that never reaches the handler (the
                // channel closed) still answers each request.
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenFailure { error in answers.failUnanswered(error) }
                channel.write(batch, promise: written)
                channel.flush()
            }
            pending.append((key, channel, indexes, answers))
        }
        var refused: [Int] = []
        for (key, channel, indexes, answers) in pending {
            let outcomes = (try? await answers.futureResult.get()) ?? []
            var goingAway = false
            for (index, outcome) in zip(indexes, outcomes) {
                if case .failure(HTTP2ConnectionError.goingAway) = outcome {
                    refused.append(index)
                    goingAway = true
                } else {
                    results[index] = outcome
                }
            }
            if goingAway { discard(key.endpoint, key.slot, channel) }
        }
        return refused
    }

    private struct ConnectionKey: Hashable {
        var endpoint: HTTPSEndpoint
        var slot: Int
    }

    package static func headers(_ request: HTTP2Request) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 4)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        // Values unique to one request stay out of the HPACK dynamic table: indexed, each push's
        // path and apns-id would evict the provider token (the one large repeated value) every
        // few requests, and both ends would Huffman-code its ~250 bytes again.
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        headers.add(name: ":authority", value: request.endpoint.authority)
        for (name, value) in request.headers {
            headers.add(name: name, value: value, indexing: request.uniqueHeaders.contains(name) ? .nonIndexable : .indexable)
        }
        return headers
    }

    /// Sends one request on connection `slot` (modulo the count) to `endpoint`.
    package func send(_ endpoint: HTTPSEndpoint, slot: Int, headers: HPACKHeaders, body: ByteBuffer) async throws -> HTTP2Response {
        let index = slot % connectionsPerHost
        let channel = try await channel(endpoint, slot: index).get()
        do {
            return try await attempt(on: channel, headers: headers, body: body)
        } catch HTTP2ConnectionError.goingAway {
            // Refused before sending: the connection had received GOAWAY and is draining. It
            // leaves the slot, and a fresh connection takes the request.
            discard(endpoint, index, channel)
            onResend?(1)
            return try await attempt(on: try await self.channel(endpoint, slot: index).get(), headers: headers, body: body)
        }
    }

    private func attempt(on channel: any Channel, headers: HPACKHeaders, body: ByteBuffer) async throws -> HTTP2Response {
        let answers = HTTP2RoundAnswers(count: 1, on: channel.eventLoop)
        // A write that never reaches the handler (the channel closed in between) must still
        // answer the request.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { error in answers.failUnanswered(error) }
        channel.writeAndFlush([HTTP2StreamRequest(headers: headers, body: body, answers: answers, index: 0)], promise: written)
        guard let answer = try await answers.futureResult.get().first else { throw HTTP2ConnectionError.closed }
        return try answer.get()
    }

    /// Takes `channel` out of its slot (if it is still there), so the next request connects anew.
    private func discard(_ endpoint: HTTPSEndpoint, _ index: Int, _ channel: any Channel) {
        slots.withLock { state in
            guard let slot = state.byEndpoint[endpoint]?[index], case .connected(_, let current) = slot else { return }
            if ObjectIdentifier(current) == ObjectIdentifier(channel) {
                state.byEndpoint[endpoint]?[index] = nil
            }
        }
    }

    private func channel(_ endpoint: HTTPSEndpoint, slot index: Int) -> EventLoopFuture<any Channel> {
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
    private func settle(_ endpoint: HTTPSEndpoint, _ index: Int, _ id: Int, _ result: Result<any Channel, any Error>) {
        slots.withLock { state in
            guard case .connecting(let current, _)? = state.byEndpoint[endpoint]?[index], current == id else { return }
            switch result {
            case .success(let channel): state.byEndpoint[endpoint]?[index] = .connected(id: id, channel)
            case .failure: state.byEndpoint[endpoint]?[index] = nil
            }
        }
    }

    private func connect(_ endpoint: HTTPSEndpoint) -> EventLoopFuture<any Channel> {
        let sslContext = self.sslContext
        let timeout = requestTimeout
        return ClientBootstrap(group: group.next())
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(Self.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: endpoint.serverName)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(FlushCoalescingHandler())
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: Self.http2))
                    try channel.pipeline.syncOperations.addHandler(HTTP2StreamHandler(requestTimeout: timeout))
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
    }

    /// Closes every connection (in-flight requests fail).
    package func shutdown() async {
        let futures = slots.withLock { state in
            defer { state.byEndpoint.removeAll() }
            return state.byEndpoint.values.flatMap { $0.compactMap { $0?.future } }
        }
        for future in futures {
            if let channel = try? await future.get() { try? await channel.close() }
        }
    }
}
