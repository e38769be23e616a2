import Foundation
public import GatewayWire
public import Logging
import NostrProtocol

/// Everything `linkstr-push` reads from its environment (and an optional `.env` file).
/// docs/configuration.md documents every key and default; `ConfigurationReferenceTests` holds it
/// to this code.
public struct GatewayConfiguration: Sendable {
    public enum LogFormat: String, Sendable { case json, text }

    public var listenHost: String
    public var listenPort: Int
    public var database: DatabaseURL
    /// External base URL, for the standard NIP-98 `u` check.
    public var publicURL: String?
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    public var authMaxSkewSeconds: Int64
    /// The shortest `ADMIN_TOKEN` accepted: it guards the console's sign-in form and every
    /// operator route, and a captured session cookie lets its guesser test tokens offline.
    public static let minimumAdminTokenLength = 16

    /// Bearer token for admin routes; admin routes are off without it.
    public var adminToken: String?
    public var apns: APNsConfiguration
    public var delivery: DeliverySettings
    public var watch: WatchSettings
    public var rateLimits: RateLimitSettings
    /// How long a graceful shutdown may take before what is still running is cancelled.
    public var shutdownTimeoutSeconds: Int
    /// `MAX_DEVICES_PER_PUBKEY` (default 10): one more registration evicts the least recently
    /// registered device.
    public var maxDevicesPerPubkey: Int
    /// `PUSH_DEVICE_BUDGET` (default `10/60`); nil: no budget.
    public var deviceBudget: PushBudget?
    /// Timeouts for slow clients and the connection cap.
    public var http: HTTPServerSettings
    /// The inbox relay (`INBOX_RELAY`); off by default.
    public var inbox: InboxRelaySettings
    /// Web Push and UnifiedPush (`VAPID_SUBJECT`); off by default.
    public var webPush: WebPushSettings
    /// FCM (`FCM_SERVICE_ACCOUNT_FILE`); off by default.
    public var fcm: FCMSettings
    /// Each app's own alert text (`alerts` in `APPS_FILE` or `APNS_APPS_FILE`).
    public var alerts: AlertTextCatalog

    /// The defaults this type holds itself, each written once: the initializer and
    /// `fromEnvironment` both use them.
    public static let defaultListenHost = "0.0.0.0"
    public static let defaultListenPort = 8787
    public static let defaultLogLevel = Logger.Level.info
    public static let defaultLogFormat = LogFormat.text
    public static let defaultAuthMaxSkewSeconds: Int64 = 300
    public static let defaultShutdownTimeoutSeconds = 25

    public init(
        listenHost: String = defaultListenHost, listenPort: Int = defaultListenPort, database: DatabaseURL, publicURL: String? = nil,
        logLevel: Logger.Level = defaultLogLevel, logFormat: LogFormat = defaultLogFormat,
        authMaxSkewSeconds: Int64 = defaultAuthMaxSkewSeconds,
        adminToken: String? = nil, apns: APNsConfiguration, delivery: DeliverySettings = DeliverySettings(),
        watch: WatchSettings = WatchSettings(), rateLimits: RateLimitSettings = .disabled,
        shutdownTimeoutSeconds: Int = defaultShutdownTimeoutSeconds,
        maxDevicesPerPubkey: Int = GatewayStore.defaultMaxDevicesPerPubkey, deviceBudget: PushBudget? = .default,
        http: HTTPServerSettings = HTTPServerSettings(), inbox: InboxRelaySettings = InboxRelaySettings(),
        webPush: WebPushSettings = WebPushSettings(), fcm: FCMSettings = FCMSettings(), alerts: AlertTextCatalog = AlertTextCatalog()
    ) {
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.database = database
        self.publicURL = publicURL
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.authMaxSkewSeconds = authMaxSkewSeconds
        self.adminToken = adminToken
        self.apns = apns
        self.delivery = delivery
        self.watch = watch
        self.rateLimits = rateLimits
        self.shutdownTimeoutSeconds = shutdownTimeoutSeconds
        self.maxDevicesPerPubkey = maxDevicesPerPubkey
        self.deviceBudget = deviceBudget
        self.http = http
        self.inbox = inbox
        self.webPush = webPush
        self.fcm = fcm
        self.alerts = alerts
    }

    /// The platforms devices may register for: APNs always, the others when configured.
    public var platforms: Set<PushPlatform> {
        var platforms: Set<PushPlatform> = [.apns]
        if webPush.enabled { platforms.formUnion([.webpush, .unifiedpush]) }
        if fcm.enabled { platforms.insert(.fcm) }
        return platforms
    }

    /// `watch`, knowing the gateway's own inbox relay when it serves one.
    public var watchSettings: WatchSettings {
        var settings = watch
        if inbox.enabled { settings.ownInboxRelay = inbox.relayURL?.description }
        return settings
    }

    /// Reads the configuration; the first problem found stops start-up with the key it concerns.
    public static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> GatewayConfiguration {
        let (host, port) = try parseListenAddress(env["LISTEN_ADDR"] ?? ":\(defaultListenPort)")
        guard let databaseText = env["DATABASE_URL"], !databaseText.isEmpty else {
            throw ConfigurationError(key: "DATABASE_URL", "required (postgres://user:pass@host:port/db)")
        }
        let database = try DatabaseURL(parsing: databaseText)
        var publicURL = env["PUBLIC_URL"].flatMap { $0.isEmpty ? nil : $0 }
        if let url = publicURL {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw ConfigurationError(key: "PUBLIC_URL", "must be an http(s) URL")
            }
            if url.hasSuffix("/") { publicURL = String(url.dropLast()) }
        }
        let level: Logger.Level
        if let text = env["LOG_LEVEL"], !text.isEmpty {
            guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
                throw ConfigurationError(key: "LOG_LEVEL", "one of trace, debug, info, notice, warning, error, critical")
            }
            level = parsed
        } else {
            level = defaultLogLevel
        }
        let format: LogFormat
        if let text = env["LOG_FORMAT"], !text.isEmpty {
            guard let parsed = LogFormat(rawValue: text.lowercased()) else { throw ConfigurationError(key: "LOG_FORMAT", "json or text") }
            format = parsed
        } else {
            format = defaultLogFormat
        }
        var skew = defaultAuthMaxSkewSeconds
        if let text = env["AUTH_MAX_SKEW_SECONDS"], !text.isEmpty {
            guard let parsed = Int64(text), (1...86_400).contains(parsed) else {
                throw ConfigurationError(key: "AUTH_MAX_SKEW_SECONDS", "an integer number of seconds in 1...86400")
            }
            skew = parsed
        }
        var shutdownTimeout = defaultShutdownTimeoutSeconds
        if let text = env["SHUTDOWN_TIMEOUT_SECONDS"], !text.isEmpty {
            guard let parsed = Int(text), (1...3_600).contains(parsed) else {
                throw ConfigurationError(key: "SHUTDOWN_TIMEOUT_SECONDS", "an integer number of seconds in 1...3600")
            }
            shutdownTimeout = parsed
        }
        var maxDevices = GatewayStore.defaultMaxDevicesPerPubkey
        if let text = env["MAX_DEVICES_PER_PUBKEY"], !text.isEmpty {
            guard let parsed = Int(text), (1...1_000).contains(parsed) else {
                throw ConfigurationError(key: "MAX_DEVICES_PER_PUBKEY", "an integer in 1...1000")
            }
            maxDevices = parsed
        }
        let adminToken = env["ADMIN_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        if let adminToken, adminToken.count < minimumAdminTokenLength {
            throw ConfigurationError(
                key: "ADMIN_TOKEN", "at least \(minimumAdminTokenLength) characters (openssl rand -hex 32 makes a good one)")
        }
        let appsFile = try AppsFile.fromEnvironment(env)
        return GatewayConfiguration(
            listenHost: host, listenPort: port, database: database, publicURL: publicURL, logLevel: level, logFormat: format,
            authMaxSkewSeconds: skew, adminToken: adminToken,
            apns: try APNsConfiguration.fromEnvironment(env, appsFile: appsFile), delivery: try DeliverySettings.fromEnvironment(env),
            watch: try WatchSettings.fromEnvironment(env), rateLimits: try RateLimitSettings.fromEnvironment(env),
            shutdownTimeoutSeconds: shutdownTimeout, maxDevicesPerPubkey: maxDevices, deviceBudget: try PushBudget.fromEnvironment(env),
            http: try HTTPServerSettings.fromEnvironment(env), inbox: try inboxSettings(env, publicURL: publicURL),
            webPush: try WebPushSettings.fromEnvironment(env), fcm: try FCMSettings.fromEnvironment(env),
            alerts: appsFile?.alerts ?? AlertTextCatalog())
    }

    /// The inbox relay's settings; `INBOX_RELAY=1` needs `PUBLIC_URL`, which names the relay.
    static func inboxSettings(_ env: [String: String], publicURL: String?) throws(ConfigurationError) -> InboxRelaySettings {
        let defaults = InboxRelaySettings()
        let (host, port): (String, Int)
        do {
            (host, port) = try parseListenAddress(env["INBOX_LISTEN_ADDR"] ?? "\(defaults.listenHost):\(defaults.listenPort)")
        } catch {
            throw ConfigurationError(key: "INBOX_LISTEN_ADDR", "expected [host]:port, for example :8788")
        }
        let enabled = ConfigurationError.flag(env, "INBOX_RELAY")
        var relayURL: RelayURL?
        if enabled {
            guard let publicURL, let url = InboxRelaySettings.relayURL(publicURL: publicURL) else {
                throw ConfigurationError(key: "INBOX_RELAY", "needs PUBLIC_URL, which names the relay (https://host → wss://host/relay)")
            }
            relayURL = url
        }
        return InboxRelaySettings(
            enabled: enabled, listenHost: host, listenPort: port, relayURL: relayURL,
            retentionDays: try ConfigurationError.integer(env, "INBOX_RETENTION_DAYS", 1...3650, default: defaults.retentionDays),
            maxConnectionsPerAddress: try ConfigurationError.integer(
                env, "INBOX_MAX_CONNECTIONS_PER_IP", 1...100_000, default: defaults.maxConnectionsPerAddress),
            maxSubscriptions: try ConfigurationError.integer(env, "INBOX_MAX_SUBSCRIPTIONS", 1...1_000, default: defaults.maxSubscriptions),
            eventsPerSecond: try ConfigurationError.integer(env, "INBOX_EVENTS_PER_SECOND", 1...100_000, default: defaults.eventsPerSecond))
    }

    /// `:8787`, `127.0.0.1:8787`, `[::1]:8787`.
    static func parseListenAddress(_ text: String) throws(ConfigurationError) -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ConfigurationError(key: "LISTEN_ADDR", "expected [host]:port, for example :8787")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? defaultListenHost : host, port)
    }

    /// The process environment over an optional `.env` file (the environment wins).
    public static func environment(dotEnvPath: String = ".env") -> [String: String] {
        var merged: [String: String] = [:]
        if let text = try? String(contentsOfFile: dotEnvPath, encoding: .utf8) {
            for line in text.split(whereSeparator: \.isNewline) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else { continue }
                let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "export ", with: "")
                var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                if value.count >= 2, (value.hasPrefix("\"") && value.hasSuffix("\"")) || (value.hasPrefix("'") && value.hasSuffix("'")) {
                    value = String(value.dropFirst().dropLast())
                }
                merged[key] = value
            }
        }
        for (key, value) in ProcessInfo.processInfo.environment { merged[key] = value }
        return merged
    }
}
