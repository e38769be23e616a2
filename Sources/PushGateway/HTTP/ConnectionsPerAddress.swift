import NIOCore
import NostrProtocol

/// Open connections per client address (an IPv6 client by its /64), shared by every connection of
/// one server. `HTTP_MAX_CONNECTIONS` caps them all together, so without a share per address one
/// client could hold every slot and lock everyone else out, orchestrator probes included.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    private let open = Locked<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection from `key`; false (and not counted) when `key` is at its limit.
    func admit(_ key: String) -> Bool {
        open.withLock { open in
            let count = open[key, default: 0]
            guard count < limit else { return false }
            open[key] = count + 1
            return true
        }
    }

    func release(_ key: String) {
        open.withLock { open in
            guard let count = open[key] else { return }
            open[key] = count > 1 ? count - 1 : nil
        }
    }

    /// A handler for one new connection: closes it at once when its address is at the limit.
    func handler() -> Handler { Handler(tracker: self) }

    final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny

        private let tracker: ConnectionsPerAddress
        private var admittedKey: String?

        init(tracker: ConnectionsPerAddress) {
            self.tracker = tracker
        }

        func handlerAdded(context: ChannelHandlerContext) {
            guard admittedKey == nil else { return }
            let peer = context.channel.remoteAddress?.ipAddress ?? "unknown"
            let key = ClientAddress.limiterKey(peer) ?? peer
            if tracker.admit(key) {
                admittedKey = key
            } else {
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            releaseOnce()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            releaseOnce()
        }

        private func releaseOnce() {
            if let admittedKey { tracker.release(admittedKey) }
            admittedKey = nil
        }
    }
}
