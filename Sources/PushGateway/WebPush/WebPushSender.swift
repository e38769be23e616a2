import AsyncHTTPClient
public import Foundation
import GatewayWire
public import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NostrProtocol
public import NostrRelay
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
///   minute, for a call).
/// - Before a host is contacted, its name is resolved and refused when any address is not public
///   (unless private addresses are allowed), as relay URLs are; the verdict is kept for a minute.
///   AsyncHTTPClient resolves the name again to connect, so a name whose answers change between
///   the two (DNS rebinding) is not caught. Redirects are never followed.
public final class WebPushSender: PushSender {
    let client: HTTPClient
    let keys: VAPIDKeyStore
    let subject: String
    let policy: RelayAddressPolicy
    let logger: Logger
    let now: @Sendable () -> Date
    private let tokens = Mutex<[String: (header: String, expiresAt: Date)]>([:])
    private let hostVerdicts = Mutex<[String: (refusal: String?, checkedAt: Date)]>([:])
    static let requestTimeout: TimeAmount = .seconds(30)
    /// A JWT is signed for 12 hours (RFC 8292 allows 24) and replaced an hour before it ends.
    static let tokenLifetime: TimeInterval = 12 * 3600
    static let tokenRenewal: TimeInterval = 3600

    public init(
        settings: WebPushSettings, keys: VAPIDKeyStore, policy: RelayAddressPolicy, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: Self.requestTimeout))
        configuration.httpVersion = .automatic
        configuration.connectionPool = .init(idleTimeout: .minutes(5))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
        self.keys = keys
        self.subject = settings.subject ?? ""
        self.policy = policy
        self.logger = logger
        self.now = now
    }

    public func send(_ job: ClaimedJob) async -> PushSendResult {
        guard let endpoint = job.destination.endpoint else {
            // The router sends only endpoint platforms here; anything else is a routing bug.
            return PushSendResult(status: 0, reason: "NotAnEndpointDevice", outcome: .drop(reason: "NotAnEndpointDevice"))
        }
        if let refusal = await refusal(for: endpoint) {
            logger.warning(
                "push endpoint refused", metadata: ["push.device": "\(DeviceToken.redacted(job.deviceToken))", "push.reason": "\(refusal)"])
            return PushSendResult(status: 0, reason: refusal, outcome: .removeDevice(reason: refusal, invalidSinceMilliseconds: nil))
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
            let response = try await client.execute(request, deadline: .now() + Self.requestTimeout, logger: logger)
            let status = Int(response.status.code)
            // A short reason for operators (the services answer JSON or text); never a whole body.
            let body = try? await response.body.collect(upTo: 4_096)
            let reason = body.flatMap { Self.reason(String(buffer: $0)) }
            let retryAfter = WebPushResponseClassifier.retryAfter(
                response.headers.first(name: "retry-after"), now: now().timeIntervalSince1970)
            let outcome = WebPushResponseClassifier.classify(status: status, reason: reason, retryAfterSeconds: retryAfter)
            if status == 413 {
                logger.error(
                    "push service refused a message as too large: a gateway bug",
                    metadata: ["push.id": "\(job.apnsID)", "push.bytes": "\(message.plaintext.count)"])
            }
            return PushSendResult(status: status, reason: reason, outcome: outcome)
        } catch {
            logger.warning(
                "push request failed",
                metadata: [
                    "push.id": "\(job.apnsID)", "push.platform": "\(job.destination.platform.rawValue)",
                    "error.type": "\(type(of: error))",
                ])
            return PushSendResult(status: 0, reason: "ConnectionError", outcome: .retry(reason: "ConnectionError"))
        }
    }

    /// Closes the connections (after the delivery worker stopped).
    public func shutdown() async { try? await client.shutdown() }

    /// The `Authorization` header for `endpoint`'s origin, from the cache while it has an hour left.
    func authorization(for endpoint: PushEndpoint) async throws -> String {
        let origin = endpoint.origin
        let date = now()
        if let cached = tokens.withLock({ $0[origin] }), cached.expiresAt.timeIntervalSince(date) > Self.tokenRenewal {
            return cached.header
        }
        let key = try await keys.current()
        let expiresAt = date.addingTimeInterval(Self.tokenLifetime)
        let header = try key.authorization(endpoint: endpoint.description, subject: subject, expiresAt: expiresAt)
        tokens.withLock { $0[origin] = (header, expiresAt) }
        return header
    }

    /// Why `endpoint`'s host may not be contacted, or nil. A lookup that fails is not a verdict:
    /// the push is tried, and AsyncHTTPClient's own lookup fails it as a connection error.
    func refusal(for endpoint: PushEndpoint) async -> String? {
        if let refusal = policy.refusal(for: endpoint.host) { return "endpoint \(refusal)" }
        guard case .name(let name) = endpoint.host, !policy.allowsPrivate else { return nil }
        let date = now()
        if let known = hostVerdicts.withLock({ $0[name] }), date.timeIntervalSince(known.checkedAt) < 60 { return known.refusal }
        guard let addresses = try? await HostResolver.addresses(of: name), !addresses.isEmpty else { return nil }
        let refusal = policy.refusal(resolved: addresses).map { "endpoint \($0)" }
        hostVerdicts.withLock { verdicts in
            if verdicts.count >= 10_000 { verdicts.removeAll(keepingCapacity: true) }
            verdicts[name] = (refusal, date)
        }
        return refusal
    }

    /// The first line of a service's answer, escaped and cut short: what it said, for the log.
    static func reason(_ body: String) -> String? {
        let line = body.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let printable = String(line.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(200).map(Character.init))
        return printable.isEmpty ? nil : printable
    }
}
