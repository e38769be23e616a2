public import NostrProtocol

/// The gateway as a NIP-17 inbox relay: off unless `INBOX_RELAY=1`.
public struct InboxRelaySettings: Sendable {
    /// `INBOX_RELAY=1`: serve the relay.
    public var enabled: Bool
    /// `INBOX_LISTEN_ADDR` (default `0.0.0.0:8788`): its own listener, so that its WebSocket
    /// connections count against none of the API's limits.
    public var listenHost: String
    public var listenPort: Int
    /// The relay's public URL, `PUBLIC_URL` with a WebSocket scheme and the path `/relay`: what a
    /// client's NIP-42 AUTH must name, and how the relay names itself in pushes.
    public var relayURL: RelayURL?
    /// `INBOX_RETENTION_DAYS` (default 14): stored wraps are deleted after this long.
    public var retentionDays: Int
    /// `INBOX_MAX_CONNECTIONS_PER_IP` (default 20; an IPv6 client by its /64).
    public var maxConnectionsPerAddress: Int
    /// `INBOX_MAX_SUBSCRIPTIONS` (default 10): open REQs per connection.
    public var maxSubscriptions: Int
    /// `INBOX_EVENTS_PER_SECOND` (default 10, bursts of 20): EVENTs per connection.
    public var eventsPerSecond: Int

    /// The largest event accepted, as its JSON.
    public static let maxEventBytes = 64 * 1024
    /// The largest client message: an EVENT of `maxEventBytes` and its envelope.
    public static let maxMessageBytes = maxEventBytes + 1024
    /// How far back and ahead of now a wrap's `created_at` may lie: NIP-59 randomises it up to two
    /// days into the past, and clocks drift.
    public static let maxAgeSeconds: Int64 = 3 * 86_400
    public static let maxFutureSeconds: Int64 = 15 * 60
    /// Stored events one REQ filter returns at most.
    public static let maxLimit = 500

    public init(
        enabled: Bool = false, listenHost: String = "0.0.0.0", listenPort: Int = 8788, relayURL: RelayURL? = nil, retentionDays: Int = 14,
        maxConnectionsPerAddress: Int = 20, maxSubscriptions: Int = 10, eventsPerSecond: Int = 10
    ) {
        self.enabled = enabled
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.relayURL = relayURL
        self.retentionDays = retentionDays
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxSubscriptions = maxSubscriptions
        self.eventsPerSecond = eventsPerSecond
    }

    /// `PUBLIC_URL` as the relay's URL: `https://push.example.com` is `wss://push.example.com/relay`.
    package static func relayURL(publicURL: String) -> RelayURL? {
        let socket =
            publicURL.hasPrefix("https://")
            ? "wss://" + publicURL.dropFirst("https://".count)
            : publicURL.hasPrefix("http://") ? "ws://" + publicURL.dropFirst("http://".count) : publicURL
        let base = socket.hasSuffix("/") ? String(socket.dropLast()) : socket
        return try? RelayURL(base + "/relay")
    }
}
