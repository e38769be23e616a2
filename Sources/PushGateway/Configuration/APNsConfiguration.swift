import Crypto
import Foundation
import NostrProtocol

/// One app (APNs topic) the gateway can push to, with its token-auth key.
public struct APNsApp: Sendable, Equatable {
    public var topic: String
    public var keyID: String
    public var teamID: String
    /// The ES256 key as PEM (the `.p8` file's text). Never logged.
    public var privateKeyPEM: String

    public init(topic: String, keyID: String, teamID: String, privateKeyPEM: String) {
        self.topic = topic
        self.keyID = keyID
        self.teamID = teamID
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Where and how pushes go.
public struct APNsConfiguration: Sendable, Equatable {
    /// `APNS_DISABLE=1`: a sender that only logs.
    public var disabled: Bool
    public var apps: [APNsApp]
    /// The topic a device gets when it registers without one.
    public var defaultTopic: String
    public var productionURL: String
    public var sandboxURL: String
    /// Extra trusted CA (PEM path), for a local sandbox with its own certificate.
    public var caFile: String?
    /// `APNS_CONNECTIONS` (default 2): HTTP/2 connections per APNs host.
    public var connections: Int
    /// `APNS_TRANSPORT` (default `nio`): SwiftNIO HTTP/2 frames, or `async-http-client`.
    public var transport: APNsTransportKind

    public static let appleProductionURL = "https://api.push.apple.com"
    public static let appleSandboxURL = "https://api.sandbox.push.apple.com"
    public static let defaultConnections = 2
    public static let defaultTransport = APNsTransportKind.nio

    public init(
        disabled: Bool, apps: [APNsApp], defaultTopic: String, productionURL: String = appleProductionURL,
        sandboxURL: String = appleSandboxURL, caFile: String? = nil, connections: Int = defaultConnections,
        transport: APNsTransportKind = defaultTransport, keylessTopics: Set<String> = []
    ) {
        self.keylessTopics = keylessTopics
        self.disabled = disabled
        self.apps = apps
        self.defaultTopic = defaultTopic
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.caFile = caFile
        self.connections = connections
        self.transport = transport
    }

    /// Apps `APPS_FILE` lists without an APNs key (on Android or the web only): devices may
    /// register for them.
    public var keylessTopics: Set<String>

    /// The topics devices may register for.
    public var topics: Set<String> { Set(apps.map(\.topic) + [defaultTopic]).union(keylessTopics) }

    /// `appsFile`: the apps `APPS_FILE` or `APNS_APPS_FILE` listed (the apps with a key are sent
    /// for; every topic may be registered).
    static func fromEnvironment(_ env: [String: String], appsFile: AppsFile? = nil) throws(ConfigurationError) -> APNsConfiguration {
        let disabled = ConfigurationError.flag(env, "APNS_DISABLE")
        // Checked even when APNs is disabled: a typo should not wait for the day it is enabled.
        let connections = try connections(env)
        let transport = try transport(env)
        var apps = appsFile?.apnsApps ?? []
        let topic = env["APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 }
        if let topic, !apps.contains(where: { $0.topic == topic }) {
            let keyID = try require(env, "APNS_KEY_ID", unless: disabled)
            let teamID = try require(env, "APNS_TEAM_ID", unless: disabled)
            let pem = try loadKey(env, unless: disabled)
            if !disabled || pem != nil {
                apps.insert(APNsApp(topic: topic, keyID: keyID ?? "", teamID: teamID ?? "", privateKeyPEM: pem ?? ""), at: 0)
            }
        }
        let keyless = Set(appsFile?.topics ?? []).subtracting(apps.map(\.topic))
        guard let defaultTopic = topic ?? apps.first?.topic ?? appsFile?.topics.first else {
            if disabled {
                return APNsConfiguration(
                    disabled: true, apps: [], defaultTopic: "app.linkstr.ios", connections: connections, transport: transport,
                    keylessTopics: keyless)
            }
            throw ConfigurationError(key: "APNS_TOPIC", "required unless APNS_DISABLE=1 (or APPS_FILE or APNS_APPS_FILE lists apps)")
        }
        if !disabled {
            for app in apps {
                do { _ = try P256.Signing.PrivateKey(pemRepresentation: app.privateKeyPEM) } catch {
                    throw ConfigurationError(key: "APNS_KEY_P8", "the key for \(app.topic) is not a PEM ES256 (P-256) private key")
                }
            }
        }
        return APNsConfiguration(
            disabled: disabled, apps: apps, defaultTopic: defaultTopic,
            productionURL: try url(env, "APNS_PRODUCTION_URL", default: appleProductionURL),
            sandboxURL: try url(env, "APNS_SANDBOX_URL", default: appleSandboxURL),
            caFile: env["APNS_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 },
            connections: connections, transport: transport, keylessTopics: keyless)
    }

    private static func require(_ env: [String: String], _ key: String, unless disabled: Bool) throws(ConfigurationError) -> String? {
        if let value = env[key], !value.isEmpty { return value }
        if disabled { return nil }
        throw ConfigurationError(key: key, "required unless APNS_DISABLE=1")
    }

    private static func loadKey(_ env: [String: String], unless disabled: Bool) throws(ConfigurationError) -> String? {
        if let pem = env["APNS_KEY_P8"], !pem.isEmpty { return pem.replacingOccurrences(of: "\\n", with: "\n") }
        if let path = env["APNS_KEY_P8_PATH"], !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(key: "APNS_KEY_P8_PATH", "cannot read \(path)")
            }
            return text
        }
        if disabled { return nil }
        throw ConfigurationError(key: "APNS_KEY_P8", "APNS_KEY_P8 or APNS_KEY_P8_PATH is required unless APNS_DISABLE=1")
    }

    private static func transport(_ env: [String: String]) throws(ConfigurationError) -> APNsTransportKind {
        guard let text = env["APNS_TRANSPORT"], !text.isEmpty else { return defaultTransport }
        guard let kind = APNsTransportKind(rawValue: text.lowercased()) else {
            throw ConfigurationError(key: "APNS_TRANSPORT", "nio or async-http-client")
        }
        return kind
    }

    private static func connections(_ env: [String: String]) throws(ConfigurationError) -> Int {
        try ConfigurationError.integer(env, "APNS_CONNECTIONS", 1...64, default: defaultConnections)
    }

    private static func url(_ env: [String: String], _ key: String, default value: String) throws(ConfigurationError) -> String {
        guard let text = env[key], !text.isEmpty else { return value }
        guard text.hasPrefix("https://") || text.hasPrefix("http://") else { throw ConfigurationError(key: key, "must be an http(s) URL") }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
