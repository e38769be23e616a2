public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NostrProtocol

/// Sends notifications to APNs over HTTP/2 (AsyncHTTPClient, TLS with ALPN `h2`).
///
/// - Connections stay open and are reused; AsyncHTTPClient multiplexes requests over them and
///   never opens more streams on a connection than the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
///   (requests beyond it wait for a free stream).
/// - `APNS_CONNECTIONS` clients, each holding its own HTTP/2 connection per host, share the load
///   (a job always uses the same one): one connection's TLS and HTTP/2 work runs on one event-loop
///   thread, so a single connection caps throughput at one core. Apple recommends several
///   connections for volume.
/// - One provider token per (key id, team id) (`APNsTokenCache`), shared by every request.
/// - `apns-id` is the job's id, so retries of one job carry the same id.
/// - A 403 `ExpiredProviderToken` refreshes the token (within Apple's 20-minute rule) and, when a
///   new one was issued, retries once at once; otherwise the worker backs off as usual.
public final class HTTP2APNsSender: APNsSender {
    /// One HTTP client (and so one HTTP/2 connection per APNs host) per configured connection.
    public let clients: [HTTPClient]
    private let configuration: APNsConfiguration
    private let appsByTopic: [String: App]
    private let metrics: GatewayMetrics?
    private let logger: Logger
    /// A request that takes longer than this counts as a connection failure and is retried.
    let requestTimeout: TimeAmount = .seconds(30)

    struct App: Sendable {
        var keyID: String
        var tokens: APNsTokenCache
    }

    public init(configuration: APNsConfiguration, metrics: GatewayMetrics? = nil, logger: Logger, now: @escaping @Sendable () -> Date = Date.init) throws {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        // One cache per (key id, team id): apps sharing a key share its token.
        var caches: [String: APNsTokenCache] = [:]
        var apps: [String: App] = [:]
        for app in configuration.apps {
            let key = app.keyID + "." + app.teamID
            let cache = try caches[key] ?? APNsTokenCache(signer: APNsTokenSigner(app: app), now: now)
            caches[key] = cache
            apps[app.topic] = App(keyID: app.keyID, tokens: cache)
        }
        appsByTopic = apps

        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = configuration.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(30)))
        clientConfiguration.httpVersion = .automatic
        // Apple treats connection churn as abuse: keep idle connections for a long time.
        clientConfiguration.connectionPool = .init(idleTimeout: .minutes(30))
        clients = (0..<max(1, configuration.connections)).map { _ in
            HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration, backgroundActivityLogger: logger)
        }

        if let metrics {
            let keyed = Dictionary(apps.values.map { ($0.keyID, $0.tokens) }, uniquingKeysWith: { first, _ in first })
            metrics.onScrape {
                for (keyID, cache) in keyed {
                    if let age = await cache.age() { metrics.jwtAge(keyID: keyID, seconds: age) }
                }
            }
        }
    }

    public func send(_ job: ClaimedJob) async -> APNsSendResult {
        guard let app = appsByTopic[job.topic] else {
            // Registered for a topic this instance no longer has a key for: nothing can deliver it.
            return APNsSendResult(status: 0, reason: "TopicNotConfigured")
        }
        let payload = job.notification.payload
        guard payload.utf8.count <= APNsNotification.maxPayloadBytes else {
            return APNsSendResult(status: 0, reason: "PayloadTooLarge")
        }
        var result = await attempt(job, payload: payload, app: app)
        if result.status == 403, result.reason == "ExpiredProviderToken", let rejected = result.providerToken {
            let refreshed = (try? await app.tokens.refresh(rejected: rejected)) ?? false
            logger.notice("APNs rejected the provider token as expired", metadata: ["apns.key_id": "\(app.keyID)", "apns.jwt_refreshed": "\(refreshed)"])
            if refreshed { result = await attempt(job, payload: payload, app: app) }
        }
        return result
    }

    private func attempt(_ job: ClaimedJob, payload: String, app: App) async -> APNsSendResult {
        let started = ContinuousClock.now
        let token: String
        do {
            token = try await app.tokens.token()
        } catch {
            return APNsSendResult(status: 0, reason: "ProviderTokenSigningFailed")
        }
        let base = job.environment == .production ? configuration.productionURL : configuration.sandboxURL
        var request = HTTPClientRequest(url: base + "/3/device/" + job.deviceToken)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer " + token)
        request.headers.add(name: "apns-id", value: job.apnsID.uuidString.lowercased())
        for (name, value) in job.notification.headers(topic: job.topic, expiration: Int64(job.expiresAt.timeIntervalSince1970)) {
            request.headers.add(name: name, value: value)
        }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: payload))

        var result: APNsSendResult
        do {
            let client = clients[Int(job.id.magnitude % UInt64(clients.count))]
            let response = try await client.execute(request, deadline: .now() + requestTimeout, logger: logger)
            let body = try await response.body.collect(upTo: 16 * 1024)
            result = Self.result(status: Int(response.status.code), body: body)
        } catch {
            // No answer (connect, TLS, reset, timeout): retried with backoff like a 503.
            result = APNsSendResult(status: 0, reason: "ConnectionError")
            logger.warning("APNs request failed", metadata: ["apns.id": "\(job.apnsID)", "error.type": "\(type(of: error))"])
        }
        result.providerToken = token
        metrics?.apnsSend(status: result.status, duration: ContinuousClock.now - started)
        return result
    }

    /// Apple's answer: the status, and for errors `{"reason": …, "timestamp"?: ms}`.
    static func result(status: Int, body: ByteBuffer) -> APNsSendResult {
        guard status != 200, body.readableBytes > 0, let json = try? JSONValue(parsing: Array(body.readableBytesView)) else {
            return APNsSendResult(status: status)
        }
        var timestamp: Int64?
        if case .integer(let value)? = json["timestamp"] { timestamp = value }
        return APNsSendResult(status: status, reason: json["reason"]?.stringValue, timestampMilliseconds: timestamp)
    }
}
