/// How long the HTTP server waits for a client, and how many it serves at once.
///
/// A client that opens a connection and then sends nothing, or a request head or body a byte at a
/// time, holds a connection and its buffers for as long as the server lets it. These bound that:
/// the head and an idle keep-alive connection get `idleTimeoutSeconds` from the last complete
/// request part, the body `bodyTimeoutSeconds` from the end of the head, and past
/// `maxConnections` the server stops accepting until a connection closes.
public struct HTTPServerSettings: Sendable, Equatable {
    /// `HTTP_IDLE_TIMEOUT_SECONDS` (default 30): a connection with no complete request head for
    /// this long, or idle between requests, is closed.
    public var idleTimeoutSeconds: Int
    /// `HTTP_BODY_TIMEOUT_SECONDS` (default 10): a request body not complete this long after its
    /// head is answered 408 and its connection closed.
    public var bodyTimeoutSeconds: Int
    /// `HTTP_MAX_CONNECTIONS` (default 4096): open connections per instance.
    public var maxConnections: Int

    public init(idleTimeoutSeconds: Int = 30, bodyTimeoutSeconds: Int = 10, maxConnections: Int = 4096) {
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.maxConnections = maxConnections
    }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> HTTPServerSettings {
        HTTPServerSettings(
            idleTimeoutSeconds: try ConfigurationError.integer(env, "HTTP_IDLE_TIMEOUT_SECONDS", 1...3600, default: 30),
            bodyTimeoutSeconds: try ConfigurationError.integer(env, "HTTP_BODY_TIMEOUT_SECONDS", 1...3600, default: 10),
            maxConnections: try ConfigurationError.integer(env, "HTTP_MAX_CONNECTIONS", 1...1_000_000, default: 4096))
    }
}
