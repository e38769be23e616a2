import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization

/// Runs the real gateway (HTTP server on loopback, real PostgreSQL) for one test.
struct GatewayHarness: Sendable {
    let client: any TestClientProtocol
    let database: PostgresClient
    let configuration: GatewayConfiguration

    static let topic = "app.linkstr.test"

    let metrics: GatewayMetrics

    static func configuration(
        _ url: DatabaseURL, adminToken: String? = "admin-secret", publicURL: String? = "https://push.example.com",
        apns: APNsConfiguration? = nil, watch: WatchSettings = WatchSettings(),
        rateLimits: RateLimitSettings = .disabled, deviceBudget: PushBudget? = .default, inbox: InboxRelaySettings = InboxRelaySettings(),
        webPush: WebPushSettings = WebPushSettings(), fcm: FCMSettings = FCMSettings(), alerts: AlertTextCatalog = AlertTextCatalog()
    ) -> GatewayConfiguration {
        GatewayConfiguration(
            listenHost: "127.0.0.1", listenPort: 0, database: url, publicURL: publicURL, authMaxSkewSeconds: 300,
            adminToken: adminToken, apns: apns ?? APNsConfiguration(disabled: true, apps: [], defaultTopic: topic),
            delivery: DeliverySettings(leaseSeconds: 30, batchSize: 64, loops: 2), watch: watch, rateLimits: rateLimits,
            deviceBudget: deviceBudget, inbox: inbox, webPush: webPush, fcm: fcm, alerts: alerts)
    }

    /// `deliver`: also run the delivery worker (with APNs disabled it logs and finishes jobs;
    /// with `apns`, for example `SandboxFixture.apns`, it sends over HTTP/2).
    static func run(
        deliver: Bool = false, apns: APNsConfiguration? = nil, watch: WatchSettings = WatchSettings(),
        rateLimits: RateLimitSettings = .disabled, publicURL: String? = "https://push.example.com",
        deviceBudget: PushBudget? = .default, inbox: InboxRelaySettings = InboxRelaySettings(),
        webPush: WebPushSettings = WebPushSettings(), fcm: FCMSettings = FCMSettings(), alerts: AlertTextCatalog = AlertTextCatalog(),
        _ body: @Sendable (GatewayHarness) async throws -> Void
    ) async throws {
        try await TestDatabase.with { url, database in
            try await run(
                url: url, database: database, deliver: deliver, apns: apns, watch: watch, rateLimits: rateLimits, publicURL: publicURL,
                deviceBudget: deviceBudget, inbox: inbox, webPush: webPush, fcm: fcm, alerts: alerts, body)
        }
    }

    /// A gateway on an existing test database (to run a second one, or one after another).
    static func run(
        url: DatabaseURL, database: PostgresClient, deliver: Bool = false, apns: APNsConfiguration? = nil,
        watch: WatchSettings = WatchSettings(), rateLimits: RateLimitSettings = .disabled,
        publicURL: String? = "https://push.example.com", deviceBudget: PushBudget? = .default,
        inbox: InboxRelaySettings = InboxRelaySettings(), webPush: WebPushSettings = WebPushSettings(),
        fcm: FCMSettings = FCMSettings(), alerts: AlertTextCatalog = AlertTextCatalog(),
        _ body: @Sendable (GatewayHarness) async throws -> Void
    ) async throws {
        let configuration = configuration(
            url, publicURL: publicURL, apns: apns, watch: watch, rateLimits: rateLimits, deviceBudget: deviceBudget, inbox: inbox,
            webPush: webPush, fcm: fcm, alerts: alerts)
        let migrator = try Migrator.load(directory: Migrator.defaultDirectory())
        let metrics = GatewayMetrics()
        let app = try GatewayApplication.build(
            configuration: configuration, migrator: migrator, deliver: deliver, metrics: metrics, logger: TestDatabase.logger)
        try await app.test(.live) { client in
            try await body(GatewayHarness(client: client, database: database, configuration: configuration, metrics: metrics))
        }
    }

    /// Polls `condition` every 50 ms for up to `seconds`; returns whether it came true.
    static func eventually(within seconds: Double = 30, _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// Reads with `read` as `eventually` polls, until what it read satisfies `done`; returns the
    /// last value read (for the expectations after) and whether it did.
    static func eventually<T: Sendable>(
        within seconds: Double = 30, reading read: @Sendable () async throws -> T, until done: @Sendable (T) -> Bool
    ) async throws -> (value: T, done: Bool) {
        let last = Mutex<T?>(nil)
        let reached = try await eventually(within: seconds) {
            let value = try await read()
            last.withLock { $0 = value }
            return done(value)
        }
        // `eventually` reads at least once.
        return (last.withLock { $0 }!, reached)
    }

    /// A signed request (linkstr dialect, fresh nonce unless given).
    @discardableResult
    func send(
        _ keys: Keys?, _ method: HTTPRequest.Method, _ path: String, json: String = "", nonce: String? = nil,
        createdAt: Int64? = nil, headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = extra
        if let keys {
            let event = HTTPAuth.linkstrEvent(
                keys: keys, method: method.rawValue, path: path, body: Array(json.utf8), nonce: nonce,
                createdAt: createdAt ?? UnixTime.now())
            headers[.authorization] = HTTPAuth.headerValue(for: event)
        }
        headers[.contentType] = "application/json"
        return try await client.execute(uri: path, method: method, headers: headers, body: json.isEmpty ? nil : ByteBuffer(string: json))
    }

    func count(_ sql: String) async throws -> Int { try await TestDatabase.count(database, sql) }

    static func token(_ seed: UInt8) -> String { Hex.encode([UInt8](repeating: seed, count: 32)) }

    static func registerBody(_ token: String, environment: String = "sandbox", extra: String = "") -> String {
        #"{"device_token":"\#(token)","apns_environment":"\#(environment)"\#(extra)}"#
    }
}

extension TestResponse {
    var json: JSONValue? { try? JSONValue(parsing: Array(body.readableBytesView)) }
    var errorMessage: String? { json?["error"]?.stringValue }
}
