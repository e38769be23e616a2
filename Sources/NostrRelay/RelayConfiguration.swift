public import NostrProtocol

/// How a `RelayConnection` behaves.
public struct RelayConfiguration: Sendable {
    public var backoff = RelayBackoff()
    /// WebSocket ping interval (keep-alive, and dead-connection detection).
    public var pingInterval: Duration = .seconds(30)
    /// Largest relay message accepted; swift-websocket's default is 16 KiB, too small for Nostr.
    public var maxMessageBytes = 1 << 20
    /// Messages waiting to be written (while connecting or when the relay is slow).
    public var outboundLimit = 10_000
    /// How long `publish` waits for the relay's OK.
    public var publishTimeout: Duration = .seconds(10)
    /// Key answering NIP-42 AUTH challenges (nil: AUTH is not answered, the state says so).
    public var authKeys: Keys?

    public init(authKeys: Keys? = nil) {
        self.authKeys = authKeys
    }
}
