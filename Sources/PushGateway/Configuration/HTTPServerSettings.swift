/// How long the HTTP server waits for a client, and how many it serves at once.
///
/// A client that opens a connection and then sends nothing, or a request head or body a byte at a
/// time, holds a connection and its buffers for as long as the server lets it. These bound that:
/// a connection gets `idleTimeoutSeconds` for a complete request head (and between requests), a
/// request `requestTimeoutSeconds` from its head to its last byte, whatever its route. Past
/// `maxConnections` the server stops accepting until a connection closes, and one address may hold
/// at most `maxConnectionsPerAddress` of them.
public struct HTTPServerSettings: Sendable, Equatable {
    /// `HTTP_IDLE_TIMEOUT_SECONDS` (default 30): a connection with no complete request head for
    /// this long, or idle between requests, is closed.
    public var idleTimeoutSeconds: Int
    /// `HTTP_REQUEST_TIMEOUT_SECONDS` (default 10): a request not read in full this long after its
    /// head has its connection closed.
    public var requestTimeoutSeconds: Int
    /// `HTTP_MAX_CONNECTIONS` (default 4096): open connections per instance.
    public var maxConnections: Int
    /// `HTTP_MAX_CONNECTIONS_PER_ADDRESS` (default 64; `0`: no per-address share): open connections
    /// from one client address (an IPv6 client by its /64). Off by default behind a trusted proxy
    /// (`RATE_LIMIT_TRUST_FORWARDED=1`), where every connection comes from the proxy.
    public var maxConnectionsPerAddress: Int?

    public init(
        idleTimeoutSeconds: Int = 30, requestTimeoutSeconds: Int = 10, maxConnections: Int = 4096, maxConnectionsPerAddress: Int? = 64
    ) {
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.requestTimeoutSeconds = requestTimeoutSeconds
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> HTTPServerSettings {
        let defaults = HTTPServerSettings()
        let behindProxy = env["RATE_LIMIT_TRUST_FORWARDED"] == "1"
        let perAddress = try ConfigurationError.integer(
            env, "HTTP_MAX_CONNECTIONS_PER_ADDRESS", 0...1_000_000,
            default: behindProxy ? 0 : defaults.maxConnectionsPerAddress ?? 0)
        return HTTPServerSettings(
            idleTimeoutSeconds: try ConfigurationError.integer(
                env, "HTTP_IDLE_TIMEOUT_SECONDS", 1...3600, default: defaults.idleTimeoutSeconds),
            requestTimeoutSeconds: try ConfigurationError.integer(
                env, "HTTP_REQUEST_TIMEOUT_SECONDS", 1...3600, default: defaults.requestTimeoutSeconds),
            maxConnections: try ConfigurationError.integer(env, "HTTP_MAX_CONNECTIONS", 1...1_000_000, default: defaults.maxConnections),
            maxConnectionsPerAddress: perAddress == 0 ? nil : perAddress)
    }
}
