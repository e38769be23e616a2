import AsyncHTTPClient
public import Foundation
import GatewayWire
public import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NostrProtocol

/// Delivers to Android devices through FCM HTTP v1 (`messages:send`), over HTTP/2 connections
/// AsyncHTTPClient keeps to FCM, with one OAuth access token shared by every send
/// (`FCMAccessTokenProvider`).
///
/// - A 401 means the token was refused before it expired (revoked, rotated key): it is dropped,
///   a new one exchanged, and the message sent once more at once. A 401 for a token under a
///   minute old is a configuration error instead: exchanging again would only repeat it.
/// - A token exchange the endpoint refuses is a configuration error for every job until it
///   succeeds (the device is kept); one that fails otherwise is retried with backoff.
/// - Each send, the wait for one of the `maxConcurrentSends` permits included, is cut at
///   `sendLimit`, inside the job's lease.
public final class FCMSender: PushSender {
    let client: HTTPClient
    public let tokens: FCMAccessTokenProvider
    let sendURL: String
    let logger: Logger
    let now: @Sendable () -> Date
    let sendLimit: Duration
    private let gate = ConcurrencyGate(limit: FCMSender.maxConcurrentSends)
    /// FCM takes many streams per connection; this bounds tasks and memory, not FCM.
    static let maxConcurrentSends = 512
    public static let defaultSendLimit: Duration = .seconds(10)

    public init(
        settings: FCMSettings, logger: Logger, now: @escaping @Sendable () -> Date = Date.init, sendLimit: Duration = defaultSendLimit
    ) throws {
        guard let account = settings.serviceAccount, let sendURL = settings.sendURL, let tokenURL = settings.effectiveTokenURL else {
            throw FCMServiceAccountError("FCM needs a service account")
        }
        // The signer first: an HTTPClient made before a throw would never be shut down.
        let signer = try FCMAssertionSigner(account: account)
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(10)))
        configuration.httpVersion = .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
        tokens = FCMAccessTokenProvider(
            signer: signer, client: client, tokenURL: tokenURL, logger: logger,
            now: now)
        self.sendURL = sendURL
        self.logger = logger
        self.now = now
        self.sendLimit = sendLimit
    }

    public func send(_ job: ClaimedJob) async -> PushSendResult {
        guard case .fcm(let token) = job.destination else {
            return PushSendResult(status: 0, reason: "NotAnFCMDevice", outcome: .drop(reason: "NotAnFCMDevice"))
        }
        let started = ContinuousClock.now
        do {
            // The limit covers the wait for a permit too: a job must be answered inside its lease
            // however many others queue for sends, or it would be claimed again and sent twice.
            return try await withDeadline(sendLimit) {
                await self.gate.withPermit {
                    // Given up while waiting: nothing is sent.
                    guard !Task.isCancelled else { return Self.timedOut }
                    return await self.attempt(job, token: token, until: started + self.sendLimit)
                }
            }
        } catch is DeadlineExceeded {
            logger.warning("push request timed out", metadata: ["push.id": "\(job.apnsID)", "push.platform": "fcm"])
            return Self.timedOut
        } catch {
            // The worker is stopping: the job stays leased and is claimed again.
            return PushSendResult(status: 0, reason: "Cancelled", outcome: .retry(reason: "Cancelled"))
        }
    }

    static let timedOut = PushSendResult(status: 0, reason: "Timeout", outcome: .retry(reason: "Timeout"))

    /// A token younger than this that FCM refuses was not revoked in the meantime: the account
    /// lacks the right to send, and exchanging again would only repeat it.
    static let freshTokenAge: TimeInterval = 60

    private func attempt(_ job: ClaimedJob, token: String, until deadline: ContinuousClock.Instant) async -> PushSendResult {
        let body = FCMMessage(job, token: token, now: now()).body.serialized
        var result = await post(body, job: job, until: deadline)
        // The access token was refused: exchange a new one and try once more.
        if case .refreshTokenAndRetry = result.outcome {
            result = await post(body, job: job, until: deadline)
        }
        return result
    }

    private func post(_ body: String, job: ClaimedJob, until deadline: ContinuousClock.Instant) async -> PushSendResult {
        let accessToken: FCMAccessTokenProvider.AccessToken
        do {
            accessToken = try await tokens.token()
        } catch {
            switch error {
            case .rejected(let reason):
                return PushSendResult(status: 0, reason: reason, outcome: .configurationError(reason: "FCMTokenRefused"))
            case .unavailable(let reason):
                return PushSendResult(status: 0, reason: reason, outcome: .retry(reason: "FCMTokenUnavailable"))
            }
        }
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer \(accessToken.value)")
        request.headers.add(name: "content-type", value: "application/json")
        // What firebase-admin sends: v2 error format (the `details` the classifier reads).
        request.headers.add(name: "x-goog-api-format-version", value: "2")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            // What is left of the send's limit (a resend after a 401 gets the rest, not a fresh 10 s).
            let remaining = max(0, Int64((ContinuousClock.now.duration(to: deadline) / .milliseconds(1)).rounded(.down)))
            let response = try await client.execute(request, deadline: .now() + .milliseconds(remaining), logger: logger)
            let status = Int(response.status.code)
            let answer = (try? await response.body.collect(upTo: 16 * 1024)).map { Array(buffer: $0) } ?? []
            let error = status == 200 ? FCMResponseClassifier.ErrorBody() : FCMResponseClassifier.ErrorBody(parsing: answer)
            let retryAfter = WebPushResponseClassifier.retryAfter(
                response.headers.first(name: "retry-after"), now: now().timeIntervalSince1970)
            var outcome = FCMResponseClassifier.classify(status: status, error: error, retryAfterSeconds: retryAfter)
            if case .refreshTokenAndRetry(let reason) = outcome {
                if now().timeIntervalSince(accessToken.issuedAt) < Self.freshTokenAge {
                    outcome = .configurationError(reason: reason)
                } else {
                    await tokens.invalidate(accessToken)
                }
            }
            if case .drop = outcome {
                logger.warning(
                    "FCM refused a message the gateway built",
                    metadata: ["push.id": "\(job.apnsID)", "push.reason": "\(error.reason ?? "")"])
            }
            return PushSendResult(status: status, reason: error.reason, outcome: outcome)
        } catch {
            logger.warning(
                "push request failed", metadata: ["push.id": "\(job.apnsID)", "push.platform": "fcm", "error.type": "\(type(of: error))"])
            return PushSendResult(status: 0, reason: "ConnectionError", outcome: .retry(reason: "ConnectionError"))
        }
    }

    /// Closes the connections (after the delivery worker stopped).
    public func shutdown() async { try? await client.shutdown() }
}
