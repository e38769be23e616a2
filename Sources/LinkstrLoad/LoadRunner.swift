import Foundation
import LoadSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Sends prepared requests over `concurrency` keep-alive HTTP/1.1 connections, one request in
/// flight on each, and reports throughput and latency.
///
/// Each connection runs its requests on its event loop (`LoadConnectionHandler`: the next request
/// goes out from the handler that read the last response), with no task, no client pipeline and
/// no header validation per request. A general-purpose client (AsyncHTTPClient) cost about 0.3 ms
/// of CPU per request here, a third of the gateway's own cost per registration, taken from the
/// same two cores the gateway and PostgreSQL run on.
struct LoadRunner: Sendable {
    let baseURL: String
    let concurrency: Int
    let deadline: Int

    struct Run: Sendable {
        var count: Int
        var failures: [Int: Int]
        var seconds: Double
        var latenciesMilliseconds: [Double]
        /// When each request was sent, by index.
        var sentAt: [Date]

        func print(title: String, unit: String) {
            let sorted = latenciesMilliseconds.sorted()
            func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            Swift.print(
                "\(title): \(count) in \(String(format: "%.2f", seconds)) s = \(String(format: "%.0f", Double(count) / seconds)) \(unit)/s; "
                    + "latency ms p50 \(String(format: "%.1f", percentile(0.5))) p99 \(String(format: "%.1f", percentile(0.99)))"
                    + (failures.isEmpty ? "" : "; non-2xx: \(failures)"))
        }
    }

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    func send(_ requests: [SignedRequest]) async throws -> Run {
        guard let url = URL(string: baseURL), url.scheme == "http", let host = url.host else {
            throw LoadError(description: "the gateway URL must be http://host[:port], not \(baseURL)")
        }
        let port = url.port ?? 80
        let authority = port == 80 ? host : "\(host):\(port)"
        let prepared = requests.map { request in
            var headers = HTTPHeaders()
            headers.add(name: "host", value: authority)
            headers.add(name: "authorization", value: request.authorization)
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(request.body.utf8.count))
            return LoadConnectionHandler.Prepared(
                head: HTTPRequestHead(version: .http1_1, method: .RAW(value: request.method), uri: request.path, headers: headers),
                body: ByteBuffer(string: request.body))
        }
        let shared = LoadConnectionHandler.Shared(requests: prepared, until: .now() + .seconds(Int64(deadline)))
        let group = MultiThreadedEventLoopGroup.singleton
        let started = Date()
        var finished: [EventLoopFuture<LoadConnectionHandler.Results>] = []
        for _ in 0..<max(1, concurrency) {
            let loop = group.next()
            let done = loop.makePromise(of: LoadConnectionHandler.Results.self)
            let channel = try await ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(LoadConnectionHandler(shared: shared, done: done))
                    }
                }
                .connect(host: host, port: port)
                .get()
            finished.append(done.futureResult.always { _ in channel.close(promise: nil) })
        }
        var run = Run(
            count: 0, failures: [:], seconds: 0, latenciesMilliseconds: [], sentAt: [Date](repeating: .distantPast, count: requests.count))
        for future in finished {
            let results = try await future.get()
            run.latenciesMilliseconds += results.latencies
            run.failures.merge(results.failures, uniquingKeysWith: +)
            for (index, date) in results.sentAt { run.sentAt[index] = date }
        }
        run.count = run.latenciesMilliseconds.count
        run.seconds = Date().timeIntervalSince(started)
        return run
    }
}

/// One keep-alive connection of a `LoadRunner`: sends the next unsent request whenever the last
/// one has been answered, until none are left or the deadline passed.
final class LoadConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    struct Prepared: Sendable {
        var head: HTTPRequestHead
        var body: ByteBuffer
    }

    struct Results: Sendable {
        var latencies: [Double] = []
        var failures: [Int: Int] = [:]
        var sentAt: [(Int, Date)] = []
    }

    /// The requests and the next index to send, shared by every connection.
    final class Shared: Sendable {
        let requests: [Prepared]
        let until: NIODeadline
        let next = Atomic<Int>(0)
        init(requests: [Prepared], until: NIODeadline) {
            self.requests = requests
            self.until = until
        }
    }

    private let shared: Shared
    private let done: EventLoopPromise<Results>
    private var results = Results()
    private var current: (index: Int, sent: NIODeadline)?
    private var status = 0
    private var completed = false

    init(shared: Shared, done: EventLoopPromise<Results>) {
        self.shared = shared
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        sendNext(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body:
            break
        case .end:
            guard let (_, sent) = current else { return }
            results.latencies.append(Double((NIODeadline.now() - sent).nanoseconds) / 1_000_000)
            if !(200..<300).contains(status) { results.failures[status, default: 0] += 1 }
            current = nil
            sendNext(context: context)
        }
    }

    private func sendNext(context: ChannelHandlerContext) {
        let index = shared.next.add(1, ordering: .relaxed).oldValue
        guard index < shared.requests.count, NIODeadline.now() < shared.until else {
            complete(.success(results))
            return
        }
        let request = shared.requests[index]
        current = (index, .now())
        results.sentAt.append((index, Date()))
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(request.body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if current != nil {
            complete(.failure(LoadRunner.LoadError(description: "the gateway closed a connection with a request in flight")))
        }
        complete(.success(results))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    /// The first outcome wins (a promise completes once).
    private func complete(_ outcome: Result<Results, any Error>) {
        guard !completed else { return }
        completed = true
        done.completeWith(outcome)
    }
}
