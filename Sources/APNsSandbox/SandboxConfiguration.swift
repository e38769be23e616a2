/// How an `apns-sandbox` behaves.
public struct SandboxConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port (see `RunningSandbox.port`).
    public var port: Int = 2197
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` advertised on every connection.
    public var maxConcurrentStreams: Int = 1000
    /// Keys whose provider tokens are accepted. Empty: provider tokens are not checked.
    public var providerKeys: [ProviderKey] = []
    /// Topics accepted; empty accepts any.
    public var allowedTopics: Set<String> = []
    /// Delay before each push answer, to model Apple's round trip.
    public var latencyMilliseconds: Int = 0
    /// JSON-lines file every push answer is appended to (nil: memory only).
    public var deliveriesFile: String?
    /// How many records `GET /deliveries` keeps (oldest dropped first).
    public var keepRecords: Int = 1_000_000

    /// The FCM face's project (its service account's `project_id`).
    public var fcmProjectID = "linkstr-sandbox"
    /// How long the FCM face's access tokens last (`expires_in`).
    public var fcmTokenLifetimeSeconds = 3600

    public init() {}
}
