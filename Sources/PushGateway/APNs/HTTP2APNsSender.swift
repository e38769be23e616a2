public import Foundation
import GatewayWire
public import Logging
import NIOCore
import NIOSSL
import NostrProtocol

/// Sends notifications to APNs over HTTP/2 (SwiftNIO, TLS with ALPN `h2`).
///
/// - Connections stay open and are reused (`HTTP2ConnectionPool`); requests are written as frames
///   on them (`HTTP2StreamHandler`), never more streams at once than the server's
///   `SETTINGS_MAX_CONCURRENT_STREAMS` (NIOHTTP2 holds the rest until a stream frees up).
/// - `APNS_CONNECTIONS` connections per host share the load (a job always uses the same one): one
///   connection's TLS and HTTP/2 work runs on one event-loop thread, so a single connection caps
///   throughput at one core. Apple recommends several connections for volume.
/// - One provider token per (key id, team id) (`APNsTokenCache`), shared by every request.
/// - `apns-id` is the job's id, so retries of one job carry the same id.
/// - A 403 `ExpiredProviderToken` refreshes the token (within Apple's 20-minute rule) and, when a
///   new one was issued, retries once at once; otherwise the worker backs off as usual.
public final class HTTP2APNsSender: PushSender {
    private let transport: any APNsTransport
    private let production: HTTPSEndpoint
    private let sandbox: HTTPSEndpoint
    private let configuration: APNsConfiguration
    private let appsByTopic: [String: App]
    private let metrics: GatewayMetrics?
    private let logger: Logger
    /// A request that takes longer than this counts as a connection failure and is retried.
    static let requestTimeout: TimeAmount = .seconds(30)

    struct App: Sendable {
        var keyID: String
        var tokens: APNsTokenCache
    }

    public init(
        configuration: APNsConfiguration, metrics: GatewayMetrics? = nil, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) throws {
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
        guard let production = HTTPSEndpoint(url: configuration.productionURL) else {
            throw ConfigurationError(key: "APNS_PRODUCTION_URL", "an https:// URL")
        }
        guard let sandbox = HTTPSEndpoint(url: configuration.sandboxURL) else {
            throw ConfigurationError(key: "APNS_SANDBOX_URL", "an https:// URL")
        }
        self.production = production
        self.sandbox = sandbox
        // Connections are kept open for as long as the process runs: Apple treats connection
        // churn as abuse.
        switch configuration.transport {
        case .nio:
            var onResend: (@Sendable (Int) -> Void)?
            if let metrics { onResend = { count in metrics.apnsResentAfterGoAway(count) } }
            transport = try HTTP2ConnectionPool(
                tls: tls, connectionsPerHost: configuration.connections, requestTimeout: Self.requestTimeout,
                onResend: onResend)
        case .asyncHTTPClient:
            transport = AsyncHTTPClientTransport(
                tls: tls, connections: configuration.connections, requestTimeout: Self.requestTimeout, logger: logger)
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

    /// One job is a round of one: the same checks, token handling and retry as a batch.
    public func send(_ job: ClaimedJob) async -> PushSendResult {
        await send([job])[0]
    }

    /// A delivery round: one token look-up per app, then every request through the transport at
    /// once (`HTTP2ConnectionPool` writes each connection's share in one event-loop hop and one
    /// flush). A job whose topic has no key or whose payload is too large is refused before
    /// sending; an `ExpiredProviderToken` answer refreshes the token (rules permitting) and that
    /// job is sent once more at once.
    public func send(_ jobs: [ClaimedJob]) async -> [PushSendResult] {
        await answers(jobs).map(\.result)
    }

    func answers(_ jobs: [ClaimedJob]) async -> [APNsAnswer] {
        var results = [APNsAnswer?](repeating: nil, count: jobs.count)
        // Per app: its provider token and the header made of it, once per round, not per push.
        var tokens: [ObjectIdentifier: (token: String, authorization: String)] = [:]
        var requests: [HTTP2Request] = []
        var sent: [(index: Int, token: String)] = []
        // The last request's shared parts: the devices of a typed push come together and share them.
        var shape: RequestShape?
        requests.reserveCapacity(jobs.count)
        sent.reserveCapacity(jobs.count)
        for (index, job) in jobs.enumerated() {
            guard job.destination.platform == .apns else {
                // The router sends only APNs devices here; anything else is a routing bug.
                results[index] = APNsAnswer(status: 0, reason: "NotAnAPNsDevice")
                continue
            }
            guard let app = appsByTopic[job.topic] else {
                // Registered for a topic this instance no longer has a key for: nothing can deliver it.
                results[index] = APNsAnswer(status: 0, reason: "TopicNotConfigured")
                continue
            }
            let current: RequestShape
            if let shape, shape.fits(job) {
                current = shape
            } else {
                current = RequestShape(job: job, payload: Self.payload(of: job))
                shape = current
            }
            guard current.body.readableBytes <= APNsNotification.maxPayloadBytes else {
                results[index] = APNsAnswer(status: 0, reason: "PayloadTooLarge")
                continue
            }
            let token: (token: String, authorization: String)
            if let known = tokens[ObjectIdentifier(app.tokens)] {
                token = known
            } else {
                do {
                    let signed = try await app.tokens.token()
                    token = (signed, Self.authorization(signed))
                } catch {
                    results[index] = APNsAnswer(status: 0, reason: "ProviderTokenSigningFailed")
                    continue
                }
                tokens[ObjectIdentifier(app.tokens)] = token
            }
            requests.append(request(job, shape: current, authorization: token.authorization))
            sent.append((index, token.token))
        }
        let started = ContinuousClock.now
        let responses = await transport.send(requests)
        let batchElapsed = ContinuousClock.now - started
        for ((index, token), response) in zip(sent, responses) {
            var result = outcome(response, job: jobs[index])
            result.providerToken = token
            let elapsed: Duration =
                switch response {
                case .success(let answer) where answer.elapsed > .zero: .nanoseconds(answer.elapsed.nanoseconds)
                default: batchElapsed
                }
            metrics?.apnsSend(status: result.status, duration: elapsed)
            results[index] = result
        }
        for index in results.indices {
            guard let result = results[index], result.status == 403, result.reason == "ExpiredProviderToken",
                let rejected = result.providerToken,
                let app = appsByTopic[jobs[index].topic]
            else { continue }
            let refreshed = (try? await app.tokens.refresh(rejected: rejected)) ?? false
            logger.notice(
                "APNs rejected the provider token as expired",
                metadata: ["apns.key_id": "\(app.keyID)", "apns.jwt_refreshed": "\(refreshed)"])
            if refreshed { results[index] = await attempt(jobs[index], payload: Self.payload(of: jobs[index]), app: app) }
        }
        return results.map { $0 ?? APNsAnswer(status: 0, reason: "ConnectionError") }
    }

    private func attempt(_ job: ClaimedJob, payload: String, app: App) async -> APNsAnswer {
        let started = ContinuousClock.now
        let token: String
        do {
            token = try await app.tokens.token()
        } catch {
            return APNsAnswer(status: 0, reason: "ProviderTokenSigningFailed")
        }
        let response: Result<HTTP2Response, any Error>
        do {
            response = .success(try await transport.send(request(job, payload: payload, authorization: Self.authorization(token))))
        } catch {
            response = .failure(error)
        }
        var result = outcome(response, job: job)
        result.providerToken = token
        metrics?.apnsSend(status: result.status, duration: ContinuousClock.now - started)
        return result
    }

    package static func authorization(_ providerToken: String) -> String { "bearer " + providerToken }

    /// A VoIP token gets the call's own payload; every other device the alert.
    package static func payload(of job: ClaimedJob) -> String {
        if case .apns(_, _, .voip) = job.destination { return job.notification.voipPayload }
        return job.notification.payload
    }

    /// `authorization` is the header's whole value (`authorization(_:)`).
    package func request(_ job: ClaimedJob, payload: String, authorization: String) -> HTTP2Request {
        request(job, shape: RequestShape(job: job, payload: payload), authorization: authorization)
    }

    func request(_ job: ClaimedJob, shape: RequestShape, authorization: String) -> HTTP2Request {
        var headers: [(String, String)] = []
        headers.reserveCapacity(2 + shape.headers.count)
        headers.append(("authorization", authorization))
        headers.append(("apns-id", job.apnsID.lowercasedString))
        headers += shape.headers
        return HTTP2Request(
            endpoint: job.environment == .production ? production : sandbox, slot: HTTP2Request.slot(of: job),
            path: "/3/device/" + job.deviceToken, headers: headers, body: shape.body,
            uniqueHeaders: job.notification.type == .giftWrap ? Self.giftWrapUniqueHeaders : Self.typedUniqueHeaders)
    }

    /// What the requests of one notification to one topic with one expiry share: the payload's
    /// bytes, and every header but `authorization` and `apns-id`. The devices of a typed push
    /// come to the sender together, so the payload is serialized once per push, not once per
    /// device. A call to a VoIP token is never shared: its expiry is counted from the moment it
    /// is sent.
    struct RequestShape {
        let notification: APNsNotification
        let topic: String
        let expiration: Int64
        let voip: Bool
        let body: ByteBuffer
        let headers: [(String, String)]

        init(job: ClaimedJob, payload: String) {
            notification = job.notification
            topic = job.topic
            expiration = Int64(job.expiresAt.timeIntervalSince1970)
            voip = Self.isVoIP(job)
            body = ByteBuffer(string: payload)
            var headers: [(String, String)]
            if voip {
                let ringing = Int64(Date().timeIntervalSince1970) + APNsNotification.voipLifetimeSeconds
                headers = job.notification.voipHeaders(topic: job.topic, expiration: min(expiration, ringing))
            } else {
                headers = job.notification.headers(topic: job.topic, expiration: expiration)
            }
            headers += [("content-type", "application/json"), ("content-length", String(body.readableBytes))]
            self.headers = headers
        }

        /// Whether `job`'s request is this one's but for its device and apns-id.
        func fits(_ job: ClaimedJob) -> Bool {
            !voip && !Self.isVoIP(job) && topic == job.topic && expiration == Int64(job.expiresAt.timeIntervalSince1970)
                && notification == job.notification
        }

        private static func isVoIP(_ job: ClaimedJob) -> Bool {
            if case .apns(_, _, .voip) = job.destination { true } else { false }
        }
    }

    /// Every request's apns-id is its own. A relay-watch alert's collapse id is its recipient,
    /// and coalescing sends a device at most one every few seconds; a typed push's is its event
    /// id, the same for every device of the request. Made once: no array per push.
    private static let typedUniqueHeaders = ["apns-id"]
    private static let giftWrapUniqueHeaders = ["apns-id", "apns-collapse-id"]

    private func outcome(_ response: Result<HTTP2Response, any Error>, job: ClaimedJob) -> APNsAnswer {
        switch response {
        case .success(let answer):
            return Self.result(status: answer.status, body: answer.body)
        case .failure(let error):
            // No answer (connect, TLS, reset, timeout): retried with backoff like a 503.
            logger.warning(
                "APNs request failed", metadata: ["apns.id": "\(job.apnsID)", "error.type": "\(type(of: error))", "error": "\(error)"])
            return APNsAnswer(status: 0, reason: "ConnectionError")
        }
    }

    /// Closes the connections (after the delivery worker stopped).
    public func shutdown() async { await transport.shutdown() }

    /// Apple's answer: the status, and for errors `{"reason": …, "timestamp"?: ms}`.
    static func result(status: Int, body: ByteBuffer) -> APNsAnswer {
        guard status != 200, body.readableBytes > 0, let json = try? JSONValue(parsing: Array(body.readableBytesView)) else {
            return APNsAnswer(status: status)
        }
        var timestamp: Int64?
        if case .integer(let value)? = json["timestamp"] { timestamp = value }
        return APNsAnswer(status: status, reason: json["reason"]?.stringValue, timestampMilliseconds: timestamp)
    }
}
