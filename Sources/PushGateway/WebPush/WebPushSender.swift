import AsyncHTTPClient
public import Foundation
import GatewayWire
public import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
public import NostrProtocol
import Synchronization
import WebPush

/// Delivers to Web Push services (RFC 8030) and UnifiedPush distributors over HTTPS, HTTP/2
/// where the service offers it (AsyncHTTPClient keeps a connection per origin).
///
/// - Each message is encrypted to its subscription (RFC 8291, `aes128gcm`), or, for a UnifiedPush
///   endpoint registered without keys, POSTed as plain JSON.
/// - Every request carries `Authorization: vapid` (RFC 8292) with a JWT for the endpoint's
///   origin, signed once per origin and reused until an hour before it expires.
/// - `TTL` is what is left of the job's lifetime, `Topic` collapses a device's undelivered
///   messages like the APNs collapse id, `Urgency` is `normal` (`high`, and a `TTL` of at most a
///   minute, for a call; `low` for a background push).
/// - Endpoints are chosen by clients, so every send is bounded: at most `maxConcurrentSends` at
///   once, each cut at `sendLimit` (10 s) whatever the service does (a slow body, a stalled DNS answer),
///   well inside the job's lease so that a round never outlives it and nothing is sent twice.
/// - Before a host is contacted, `EndpointHostCheck` resolves its name and the push is refused
///   when any address is not public (unless `WEBPUSH_ALLOW_PRIVATE_ENDPOINTS`); a lookup that
///   fails is retried later. The request then goes to an address that lookup judged
///   (`PinnedHTTPClients`): AsyncHTTPClient never looks the name up itself, so a name whose
///   answers change between the check and the connection (DNS rebinding) gains nothing.
///   Redirects are never followed.
public final class WebPushSender: PushSender {
    /// One client per endpoint host, pinned to an address its check judged.
    let pinned: PinnedHTTPClients
    let keys: VAPIDKeyStore
    let subject: String
    let hosts: EndpointHostCheck
    let logger: Logger
    let now: @Sendable () -> Date
    private let gate = ConcurrencyGate(limit: WebPushSender.maxConcurrentSends)
    private let tokens = Mutex<[String: (header: String, expiresAt: Date)]>([:])
    static let maxConcurrentSends = 128
    /// The whole of one send: look-up, connection, request and answer.
    public static let defaultSendLimit: Duration = .seconds(10)
    let sendLimit: Duration
    /// A JWT is signed for 12 hours (RFC 8292 allows 24) and replaced an hour before it ends.
    static let tokenLifetime: TimeInterval = 12 * 3600
    static let tokenRenewal: TimeInterval = 3600
    /// Origins remembered at most: past it the token cache starts over.
    static let cacheLimit = 10_000

    public init(
        settings: WebPushSettings, keys: VAPIDKeyStore, logger: Logger, now: @escaping @Sendable () -> Date = Date.init,
        sendLimit: Duration = defaultSendLimit, resolver: (@Sendable (_ name: String) async throws -> [IPAddress])? = nil
    ) throws {
        self.sendLimit = sendLimit
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(10)))
        configuration.httpVersion = .automatic
        // Short: endpoints are many origins clients chose, and an idle connection holds a socket.
        configuration.connectionPool = .init(idleTimeout: .seconds(15))
        pinned = PinnedHTTPClients(configuration: configuration, logger: logger)
        self.keys = keys
        self.subject = settings.subject ?? ""
        // A test's own name server, or the system's.
        self.hosts = EndpointHostCheck(
            allowsPrivate: settings.allowPrivateEndpoints, now: now, resolver: resolver ?? EndpointHostCheck.systemResolver)
        self.logger = logger
        self.now = now
    }

    public func send(_ job: ClaimedJob) async -> PushSendResult {
        guard let endpoint = job.destination.endpoint else {
            // The router sends only endpoint platforms here; anything else is a routing bug.
            return PushSendResult(status: 0, reason: "NotAnEndpointDevice", outcome: .drop(reason: "NotAnEndpointDevice"))
        }
        return await gate.withPermit {
            do {
                return try await withDeadline(sendLimit) { await self.attempt(job, to: endpoint) }
            } catch {
                logger.warning(
                    "push request timed out",
                    metadata: ["push.id": "\(job.apnsID)", "push.platform": "\(job.destination.platform.rawValue)"])
                return PushSendResult(status: 0, reason: "Timeout", outcome: .retry(reason: "Timeout"))
            }
        }
    }

    private func attempt(_ job: ClaimedJob, to endpoint: PushEndpoint) async -> PushSendResult {
        let addresses: [IPAddress]
        switch await hosts.destination(for: endpoint.host) {
        case .refused(.notPublic(let refusal)):
            // Dropped, the device kept: a name can resolve privately for a while (split-horizon
            // DNS), and a device that never takes a push costs nothing but this check.
            let reason = "endpoint \(refusal)"
            logger.warning(
                "push endpoint refused", metadata: ["push.device": "\(DeviceToken.redacted(job.deviceToken))", "push.reason": "\(reason)"])
            return PushSendResult(status: 0, reason: reason, outcome: .drop(reason: "EndpointNotPublic"))
        case .refused(.noAddress), .refused(.lookupFailed):
            return PushSendResult(status: 0, reason: "EndpointUnresolvable", outcome: .retry(reason: "EndpointUnresolvable"))
        case .allowed(let judged):
            addresses = judged
        }
        let message = WebPushMessage(job, now: now())
        var request = HTTPClientRequest(url: endpoint.description)
        request.method = .POST
        request.headers.add(name: "ttl", value: String(message.ttl))
        request.headers.add(name: "urgency", value: message.urgency)
        request.headers.add(name: "topic", value: message.topic)
        do {
            request.headers.add(name: "authorization", value: try await authorization(for: endpoint))
        } catch {
            logger.error("could not sign a VAPID token", metadata: ["error.type": "\(type(of: error))"])
            return PushSendResult(status: 0, reason: "VAPIDSigningFailed", outcome: .retry(reason: "VAPIDSigningFailed"))
        }
        if let subscriptionKeys = job.destination.keys {
            do {
                request.body = .bytes(ByteBuffer(bytes: try WebPushEncryption.encrypt(message.plaintext, for: subscriptionKeys)))
            } catch {
                return PushSendResult(status: 0, reason: "\(error)", outcome: .drop(reason: "EncryptionFailed"))
            }
            request.headers.add(name: "content-encoding", value: "aes128gcm")
            request.headers.add(name: "content-type", value: "application/octet-stream")
        } else {
            request.body = .bytes(ByteBuffer(bytes: message.plaintext))
            request.headers.add(name: "content-type", value: "application/json")
        }
        do {
            let answer = try await pinned.withClient(host: endpoint.host.description, addresses: addresses) { client in
                try await Self.exchange(request, on: client, logger: logger)
            }
            let status = answer.status
            let reason = answer.body.flatMap { Self.reason(String(buffer: $0)) }
            let retryAfter = WebPushResponseClassifier.retryAfter(answer.retryAfter, now: now().timeIntervalSince1970)
            let outcome = WebPushResponseClassifier.classify(
                status: status, reason: reason, retryAfterSeconds: retryAfter,
                fromKnownService: WebPushResponseClassifier.isKnownService(endpoint.host))
            if status == 413 {
                logger.warning(
                    "push service refused a message as too large",
                    metadata: ["push.id": "\(job.apnsID)", "push.bytes": "\(message.plaintext.count)"])
            }
            return PushSendResult(status: status, reason: reason, outcome: outcome)
        } catch {
            logger.warning(
                "push request failed",
                metadata: [
                    "push.id": "\(job.apnsID)", "push.platform": "\(job.destination.platform.rawValue)", "error.type": "\(type(of: error))",
                ])
            return PushSendResult(status: 0, reason: "ConnectionError", outcome: .retry(reason: "ConnectionError"))
        }
    }

    /// Closes the connections (after the delivery worker stopped).
    public func shutdown() async { await pinned.shutdown() }

    /// What a push service answered: the status, `Retry-After`, and the start of the body.
    private struct ServiceAnswer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: ByteBuffer?
    }

    /// Sends `request` and reads the answer on `client`, body included, so that a pinned client
    /// retired meanwhile is not shut down under the read.
    private static func exchange(_ request: HTTPClientRequest, on client: HTTPClient, logger: Logger) async throws -> ServiceAnswer {
        let response = try await client.execute(request, deadline: .now() + .seconds(10), logger: logger)
        // A short reason (the services answer JSON or text), read within the send's limit;
        // reading it lets the connection be reused.
        let body = try? await response.body.collect(upTo: 1_024)
        return ServiceAnswer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: body)
    }

    /// The `Authorization` header for `endpoint`'s origin, from the cache while it has an hour left.
    func authorization(for endpoint: PushEndpoint) async throws -> String {
        let origin = endpoint.origin
        let date = now()
        if let cached = tokens.withLock({ $0[origin] }), cached.expiresAt.timeIntervalSince(date) > Self.tokenRenewal {
            return cached.header
        }
        let key = try await keys.current()
        let expiresAt = date.addingTimeInterval(Self.tokenLifetime)
        let header = try key.authorization(audience: origin, subject: subject, expiresAt: expiresAt)
        tokens.withLock { tokens in
            if tokens.count >= Self.cacheLimit {
                tokens = tokens.filter { $0.value.expiresAt.timeIntervalSince(date) > Self.tokenRenewal }
                if tokens.count >= Self.cacheLimit { tokens.removeAll(keepingCapacity: true) }
            }
            tokens[origin] = (header, expiresAt)
        }
        return header
    }

    /// The first line of a service's answer, escaped and cut short: what it said, for the log.
    static func reason(_ body: String) -> String? {
        let line = body.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let printable = String(line.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(200).map(Character.init))
        return printable.isEmpty ? nil : printable
    }
}
