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
    /// Bytes of relay messages held for all subscriptions' consumers together; when they are
    /// full the connection stops reading the relay's socket until consumers catch up
    /// (`SubscriptionStream`). 4 MiB is a few thousand gift wraps, under a second of a fast relay.
    public var inboundBufferBytes = 4 << 20
    /// When reading stopped (consumers behind) for at least this long, every subscription that
    /// had caught up sends its REQ again, reaching back to when the pause began
    /// (`SubscriptionRequestContext.resumingAfter`): a relay that drops events for a client that does not
    /// read, rather than the connection, would otherwise lose them silently. nil: never (a
    /// connection that is lost while paused reaches back over the pause either way).
    public var resubscribeAfterPause: Duration?
    /// What the relay may send before the connection hangs up on it; none by default.
    public var limits = RelayLimits()
    /// At most one log line of relay-controlled text (NOTICE, CLOSED, OK) per this interval.
    public var relayTextLogInterval: Duration = .seconds(10)
    /// How long `publish` waits for the relay's OK.
    public var publishTimeout: Duration = .seconds(10)
    /// When set, the relay's host is judged before every connection attempt: an IP literal as
    /// it is, a name by every address it resolves to now (`HostResolver`). A refused relay is
    /// not connected (the state is `refused`) and is tried again after the long backoff of
    /// `limits`, since DNS may change. For URLs that users supply; nil for the operator's own.
    public var addressPolicy: RelayAddressPolicy?
    /// Looks a host name up for `addressPolicy` (every address it has now); the connection then
    /// goes to exactly these addresses.
    public typealias Resolver = @Sendable (_ host: String) async throws -> [IPAddress]
    /// The system's resolver, by default. A test puts its own name server here.
    public var resolver: Resolver = { try await HostResolver.addresses(of: $0) }
    /// How long a connection attempt may take: the TCP connection, TLS and the WebSocket
    /// upgrade, to every address tried. A relay that accepts and never answers holds an attempt
    /// no longer.
    public var handshakeTimeout: Duration = .seconds(10)
    /// PEM certificates trusted for `wss` besides the system's: a relay whose certificate a
    /// private CA signed (and tests).
    public var additionalTrustRoots: [String] = []
    /// Key answering NIP-42 AUTH challenges (nil: AUTH is not answered, the state says so).
    public var authKeys: Keys?

    public init(authKeys: Keys? = nil) {
        self.authKeys = authKeys
    }
}
