import Foundation

/// Firebase Cloud Messaging (HTTP v1): on when `FCM_SERVICE_ACCOUNT_FILE` names a service
/// account key file.
public struct FCMSettings: Sendable, Equatable {
    /// The account read from `FCM_SERVICE_ACCOUNT_FILE`; nil: FCM is off.
    public var serviceAccount: FCMServiceAccount?
    /// `FCM_TOKEN_URL`: where assertions are exchanged, instead of the file's `token_uri` (the
    /// sandbox in a container, whose file names its own address).
    public var tokenURL: String?
    /// `FCM_API_URL`: FCM's base URL; `/v1/projects/<project>/messages:send` is appended.
    public var apiURL: String
    /// `FCM_CA_FILE`: extra trust roots for the token endpoint and FCM (the sandbox's certificate).
    public var caFile: String?
    /// `FCM_CONNECTIONS` (default 2): HTTP/2 connections to FCM's host. One connection's TLS and
    /// HTTP/2 work runs on one event-loop thread.
    public var connections: Int

    public static let defaultConnections = 2

    public static let googleAPIURL = "https://fcm.googleapis.com"

    public init(
        serviceAccount: FCMServiceAccount? = nil, tokenURL: String? = nil, apiURL: String = googleAPIURL, caFile: String? = nil,
        connections: Int = defaultConnections
    ) {
        self.serviceAccount = serviceAccount
        self.tokenURL = tokenURL
        self.apiURL = apiURL
        self.caFile = caFile
        self.connections = connections
    }

    public var enabled: Bool { serviceAccount != nil }

    /// Where the access token comes from.
    public var effectiveTokenURL: String? { tokenURL ?? serviceAccount?.tokenURI }

    /// Where a project's messages go.
    public var sendURL: String? {
        serviceAccount.map { apiURL.trimmingSuffix("/") + "/v1/projects/\($0.projectID)/messages:send" }
    }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> FCMSettings {
        var settings = FCMSettings()
        func httpsURL(_ env: [String: String], _ key: String) throws(ConfigurationError) -> String? {
            guard let text = env[key], !text.isEmpty else { return nil }
            guard let url = URL(string: text), url.scheme == "https", url.host != nil, url.query == nil else {
                throw ConfigurationError(key: key, "an https URL")
            }
            return text
        }
        settings.tokenURL = try httpsURL(env, "FCM_TOKEN_URL")
        if let apiURL = try httpsURL(env, "FCM_API_URL") { settings.apiURL = apiURL }
        settings.caFile = env["FCM_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        settings.connections = try ConfigurationError.integer(env, "FCM_CONNECTIONS", 1...64, default: defaultConnections)
        if let path = env["FCM_SERVICE_ACCOUNT_FILE"], !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(key: "FCM_SERVICE_ACCOUNT_FILE", "cannot read \(path)")
            }
            do {
                let account = try FCMServiceAccount(json: text)
                // The key is checked now, so that a bad file stops start-up instead of every push.
                _ = try FCMAssertionSigner(account: account)
                settings.serviceAccount = account
            } catch {
                throw ConfigurationError(key: "FCM_SERVICE_ACCOUNT_FILE", "\(path): \(error.description)")
            }
        }
        return settings
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
