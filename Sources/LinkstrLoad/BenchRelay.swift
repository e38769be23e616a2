import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NostrProtocol

/// A minimal Nostr relay for the watcher benchmark: it answers every REQ with EOSE at once,
/// remembers which `#p` values each subscription asked for, and sends events to the subscription
/// that covers their recipient when the benchmark says so. It stores nothing and checks nothing,
/// so the figures measure the gateway, not a relay.
actor BenchRelay {
    private struct Connection {
        let outbound: AsyncStream<String>.Continuation
        var subscriptions: [String: Set<String>] = [:]
    }

    private var connections: [Int: Connection] = [:]
    private var nextID = 0

    /// Every pubkey some subscription covers, with where to send events for it.
    func routes() -> [String: (connection: Int, subscription: String)] {
        var routes: [String: (Int, String)] = [:]
        for (id, connection) in connections {
            for (subscription, pubkeys) in connection.subscriptions {
                for pubkey in pubkeys { routes[pubkey] = (id, subscription) }
            }
        }
        return routes
    }

    func coveredPubkeys() -> Int {
        var all = Set<String>()
        for connection in connections.values { for pubkeys in connection.subscriptions.values { all.formUnion(pubkeys) } }
        return all.count
    }

    /// Queues `text` on a connection; false when it is gone.
    @discardableResult
    func send(_ text: String, to connection: Int) -> Bool {
        guard let connection = connections[connection] else { return false }
        connection.outbound.yield(text)
        return true
    }

    fileprivate func add(_ outbound: AsyncStream<String>.Continuation) -> Int {
        nextID += 1
        connections[nextID] = Connection(outbound: outbound)
        return nextID
    }

    fileprivate func remove(_ id: Int) {
        connections.removeValue(forKey: id)?.outbound.finish()
    }

    fileprivate func receive(_ text: String, from id: Int) {
        guard case .array(let items)? = try? JSONValue(parsing: Array(text.utf8)), let verb = items.first?.stringValue,
              items.count >= 2, let subscription = items[1].stringValue else { return }
        switch verb {
        case "REQ":
            var pubkeys = Set<String>()
            for filter in items.dropFirst(2) {
                if case .array(let values)? = filter["#p"] { pubkeys.formUnion(values.compactMap(\.stringValue)) }
            }
            connections[id]?.subscriptions[subscription] = pubkeys
            connections[id]?.outbound.yield(JSONValue.array(["EOSE", .string(subscription)]).serialized)
        case "CLOSE":
            connections[id]?.subscriptions[subscription] = nil
        default:
            break
        }
    }

    /// Serves WebSocket clients on `host:port` until the task is cancelled.
    nonisolated func serve(host: String, port: Int, logger: Logger) async throws {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/") { inbound, outbound, _ in
            let (stream, continuation) = AsyncStream<String>.makeStream()
            let id = await self.add(continuation)
            defer { Task { await self.remove(id) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await text in stream { try await outbound.write(.text(text)) }
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { await self.receive(text, from: id) }
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
        let app = Application(
            router: Router(),
            server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: .init(maxFrameSize: 1 << 20))),
            configuration: .init(address: .hostname(host, port: port)),
            logger: logger)
        try await app.run()
    }
}
