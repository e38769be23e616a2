import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import NostrProtocol

/// A minimal Nostr relay for the watcher benchmark, or many told apart by URL path: it answers every REQ with EOSE at once,
/// remembers which `#p` values each subscription asked for, and sends events to the subscription
/// that covers their recipient when the benchmark says so. It stores nothing and checks nothing,
/// so the figures measure the gateway, not a relay.
///
/// Written on SwiftNIO's WebSocket codec rather than a framework's per-message writer: the
/// benchmark hands it each 10 ms tick's events for a connection at once, and they go out as
/// frames in one write and one flush. It runs on the machine it measures, so every microsecond
/// it spends per event is taken from the gateway (a framework writer, one flush and one
/// event-loop hop per frame, cost half a core at 5,000 events a second).
final class BenchRelay: Sendable {
    private struct Connection {
        let channel: any Channel
        /// The request path: `/` for the relay in `RELAYS`, `/u…` for a user relay.
        let path: String
        var subscriptions: [String: Set<String>] = [:]
    }

    private struct State {
        var connections: [Int: Connection] = [:]
        var nextID = 0
    }

    private let state = Locked(State())

    /// Every pubkey some subscription covers, with where to send events for it; with
    /// `userRelaysOnly`, only on user relays (any path but `/`).
    func routes(userRelaysOnly: Bool) -> [String: (connection: Int, subscription: String)] {
        state.withLock { state in
            var routes: [String: (Int, String)] = [:]
            for (id, connection) in state.connections where !userRelaysOnly || Self.isUserRelay(connection.path) {
                for (subscription, pubkeys) in connection.subscriptions {
                    for pubkey in pubkeys { routes[pubkey] = (id, subscription) }
                }
            }
            return routes
        }
    }

    func coveredPubkeys(userRelaysOnly: Bool) -> Int {
        state.withLock { state in
            var all = Set<String>()
            for connection in state.connections.values where !userRelaysOnly || Self.isUserRelay(connection.path) {
                for pubkeys in connection.subscriptions.values { all.formUnion(pubkeys) }
            }
            return all.count
        }
    }

    /// Sends `messages` (serialized relay messages) on a connection as text frames, in one write
    /// and one flush; false when the connection is gone.
    @discardableResult
    func send(_ messages: [ByteBuffer], to connection: Int) -> Bool {
        guard let channel = state.withLock({ $0.connections[connection]?.channel }) else { return false }
        channel.eventLoop.execute {
            for message in messages { channel.write(WebSocketFrame(fin: true, opcode: .text, data: message), promise: nil) }
            channel.flush()
        }
        return true
    }

    private static func isUserRelay(_ path: String) -> Bool { path != "/" && !path.isEmpty }

    fileprivate func add(_ channel: any Channel, path: String) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.connections[state.nextID] = Connection(channel: channel, path: path)
            return state.nextID
        }
    }

    fileprivate func remove(_ id: Int) {
        _ = state.withLock { $0.connections.removeValue(forKey: id) }
    }

    /// A client's REQ or CLOSE; returns the EOSE to answer a REQ with.
    fileprivate func receive(_ text: ByteBuffer, from id: Int) -> String? {
        guard case .array(let items)? = try? JSONValue(parsing: Array(text.readableBytesView)), let verb = items.first?.stringValue,
            items.count >= 2, let subscription = items[1].stringValue
        else { return nil }
        switch verb {
        case "REQ":
            var pubkeys = Set<String>()
            for filter in items.dropFirst(2) {
                if case .array(let values)? = filter["#p"] { pubkeys.formUnion(values.compactMap(\.stringValue)) }
            }
            state.withLock { $0.connections[id]?.subscriptions[subscription] = pubkeys }
            return JSONValue.array(["EOSE", .string(subscription)]).serialized
        case "CLOSE":
            state.withLock { $0.connections[id]?.subscriptions[subscription] = nil }
            return nil
        default:
            return nil
        }
    }

    /// Serves WebSocket clients on `host:port` until the task is cancelled.
    func serve(host: String, port: Int) async throws {
        let relay = self
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 20,
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    // Whole messages, whatever the client's fragmentation; control frames pass through.
                    try channel.pipeline.syncOperations.addHandlers(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: 1 << 20),
                        BenchRelayHandler(relay: relay, path: head.uri))
                }
            })
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                }
            }
            .bind(host: host, port: port).get()
        // Until cancelled; then the listener and every connection close.
        await withTaskCancellationHandler {
            try? await server.closeFuture.get()
        } onCancel: {
            server.close(promise: nil)
            for channel in relay.state.withLock({ $0.connections.values.map(\.channel) }) { channel.close(promise: nil) }
        }
    }

    /// One client connection after the upgrade: answers pings, REQs and CLOSEs.
    private final class BenchRelayHandler: ChannelInboundHandler {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        let relay: BenchRelay
        let path: String
        var id = 0

        init(relay: BenchRelay, path: String) {
            self.relay = relay
            self.path = path
        }

        func handlerAdded(context: ChannelHandlerContext) {
            id = relay.add(context.channel, path: path)
        }

        // Runs however the pipeline goes away, even for a channel that was never active here.
        func handlerRemoved(context: ChannelHandlerContext) {
            relay.remove(id)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.opcode {
            case .text:
                if let reply = relay.receive(frame.unmaskedData, from: id) {
                    context.writeAndFlush(
                        wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: reply))), promise: nil)
                }
            case .ping:
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
            case .connectionClose:
                // Echo the client's status code, then close (RFC 6455 §5.5.1).
                var data = frame.unmaskedData
                let code = data.readSlice(length: 2) ?? ByteBuffer()
                // The flushed frame is written before the close takes effect.
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)), promise: nil)
                context.close(promise: nil)
            default:
                break
            }
        }
    }
}
