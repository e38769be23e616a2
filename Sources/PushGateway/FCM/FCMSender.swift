import AsyncHTTPClient
public import Foundation
import GatewayWire
public import Logging
import NIOCore
import NIOSSL
import NostrProtocol

/// Delivers to Android devices through FCM HTTP v1 (`messages:send`): each message a request
/// written as frames on `FCM_CONNECTIONS` long-lived HTTP/2 connections (`HTTP2ConnectionPool`,
/// as for APNs), with one OAuth access token shared by every send (`FCMAccessTokenProvider`,
/// whose hourly exchange goes through AsyncHTTPClient).
///
/// - A delivery round is sent at once: one token look-up, one hop onto each connection's event
///   loop and one flush, and the caller waits once per connection. A stream channel per request
///   (AsyncHTTPClient's HTTP/2 path) cost several times the gateway's CPU per message.
/// - A 401 means the token was refused before it expired (revoked, rotated key): it is dropped,
///   a new one exchanged, and the refused messages sent once more at once. A 401 for a token
///   under a minute old is a configuration error instead: exchanging again would only repeat it.
/// - A token exchange the endpoint refuses is a configuration error for every job until it
///   succeeds (the device is kept); one that fails otherwise is retried with backoff.
/// - Each request of a round, the wait for a stream and the token exchange included, is cut at
///   `sendLimit` on its own (its stream reset, or never sent); the others keep their answers.
public final class FCMSender: PushSender {
    let client: HTTPClient
    public let tokens: FCMAccessTokenProvider
    private let transport: HTTP2ConnectionPool
    private let endpoint: HTTPSEndpoint
    private let path: String
    let logger: Logger
    let now: @Sendable () -> Date
    let sendLimit: Duration
    public static let defaultSendLimit: Duration = .seconds(10)

    public init(
        settings: FCMSettings, logger: Logger, now: @escaping @Sendable () -> Date = Date.init, sendLimit: Duration = defaultSendLimit
    ) throws {
        guard let account = settings.serviceAccount, let sendURL = settings.sendURL, let tokenURL = settings.effectiveTokenURL else {
            throw FCMServiceAccountError("FCM needs a service account")
        }
        guard let (endpoint, path) = HTTPSEndpoint.split(url: sendURL) else {
            throw ConfigurationError(key: "FCM_API_URL", "an https URL")
        }
        // The signer and the pool first: an HTTPClient made before a throw would never be shut down.
        let signer = try FCMAssertionSigner(account: account)
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.additionalTrustRoots = [.file(caFile)] }
        transport = try HTTP2ConnectionPool(tls: tls, connectionsPerHost: settings.connections, requestTimeout: TimeAmount(sendLimit))
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(10)))
        configuration.httpVersion = .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
        tokens = FCMAccessTokenProvider(
            signer: signer, client: client, tokenURL: tokenURL, logger: logger,
            now: now)
        self.endpoint = endpoint
        self.path = path
        self.logger = logger
        self.now = now
        self.sendLimit = sendLimit
    }

    /// One job is a round of one.
    public func send(_ job: ClaimedJob) async -> PushSendResult {
        await send([job])[0]
    }

    public func send(_ jobs: [ClaimedJob]) async -> [PushSendResult] {
        // What the round has learnt so far: what a cancelled or overrun round still returns.
        let answers = Locked([PushSendResult?](repeating: nil, count: jobs.count))
        do {
            // Each request is cut at the limit on its own (a stalled one does not take the answers
            // of the rest with it), and a new connection gives up within its connect timeout; this
            // limit is a net under both. Every job must be answered inside its lease, or it would
            // be claimed again and sent twice.
            try await withDeadline(max(sendLimit, Self.connectTimeout) + Self.allowance) {
                await self.round(jobs, until: .now + self.sendLimit, into: answers)
            }
            return answers.withLock { $0.map { $0 ?? Self.timedOut } }
        } catch is DeadlineExceeded {
            logger.warning("push requests timed out", metadata: ["push.platform": "fcm", "push.count": "\(jobs.count)"])
            return answers.withLock { $0.map { $0 ?? Self.timedOut } }
        } catch {
            // The worker is stopping: the jobs not answered yet stay leased and are claimed again.
            let cancelled = PushSendResult(status: 0, reason: "Cancelled", outcome: .retry(reason: "Cancelled"))
            return answers.withLock { $0.map { $0 ?? cancelled } }
        }
    }

    static let timedOut = PushSendResult(status: 0, reason: "Timeout", outcome: .retry(reason: "Timeout"))
    /// `HTTP2ConnectionPool`'s connect timeout, which a round may take before its first request.
    static let connectTimeout: Duration = .nanoseconds(HTTP2ConnectionPool.connectTimeout.nanoseconds)
    /// What the net gives a round beyond its limits.
    static let allowance: Duration = .seconds(2)

    /// A token younger than this that FCM refuses was not revoked in the meantime: the account
    /// lacks the right to send, and exchanging again would only repeat it.
    static let freshTokenAge: TimeInterval = 60

    /// Every FCM message of `jobs` at once, each result written to `answers` as it is known; those
    /// whose token FCM refused once more with a new one, while the limit and the worker allow.
    private func round(_ jobs: [ClaimedJob], until deadline: ContinuousClock.Instant, into answers: Locked<[PushSendResult?]>) async {
        var bodies = [ByteBuffer?](repeating: nil, count: jobs.count)
        var pending: [Int] = []
        pending.reserveCapacity(jobs.count)
        let sentAt = now()
        // The last message's shared parts: the devices of a typed push come together and share them.
        var shape: FCMMessageShape?
        for (index, job) in jobs.enumerated() {
            guard case .fcm(let token) = job.destination else {
                answers.withLock {
                    $0[index] = PushSendResult(status: 0, reason: "NotAnFCMDevice", outcome: .drop(reason: "NotAnFCMDevice"))
                }
                continue
            }
            if shape?.fits(job) != true { shape = FCMMessageShape(job: job, now: sentAt) }
            bodies[index] =
                shape?.body(token: token, pushID: job.apnsID.lowercasedString)
                ?? ByteBuffer(string: FCMMessage(job, token: token, now: sentAt).body.serialized)
            pending.append(index)
        }
        for sending in 1...2 where !pending.isEmpty {
            // A resend only while the round has time left and the worker is not stopping: a
            // refused message otherwise keeps its answer, and is retried later.
            if sending > 1, Task.isCancelled || ContinuousClock.now >= deadline { break }
            let accessToken: FCMAccessTokenProvider.AccessToken
            do {
                accessToken = try await withDeadline(ContinuousClock.now.duration(to: deadline)) { try await self.tokens.token() }
            } catch {
                let result =
                    switch error as? FCMTokenError {
                    case .rejected(let reason)?:
                        PushSendResult(status: 0, reason: reason, outcome: .configurationError(reason: "FCMTokenRefused"))
                    case .unavailable(let reason)?:
                        PushSendResult(status: 0, reason: reason, outcome: .retry(reason: "FCMTokenUnavailable"))
                    // The exchange outlasted the round's limit.
                    case nil: Self.timedOut
                    }
                answers.withLock { answers in
                    for index in pending { answers[index] = result }
                }
                break
            }
            let authorization = "Bearer " + accessToken.value
            let requests = pending.map { index in
                HTTP2Request(
                    endpoint: endpoint, slot: HTTP2Request.slot(of: jobs[index]), path: path,
                    headers: [
                        ("authorization", authorization), ("content-type", "application/json"),
                        // What firebase-admin sends: v2 error format (the `details` the classifier reads).
                        ("x-goog-api-format-version", "2"), ("content-length", String(bodies[index]!.readableBytes)),
                    ],
                    body: bodies[index]!, uniqueHeaders: Self.uniqueHeaders)
            }
            let responses = await transport.send(requests, answeredBy: .now() + TimeAmount(ContinuousClock.now.duration(to: deadline)))
            var results: [PushSendResult] = []
            results.reserveCapacity(pending.count)
            var refused: [Int] = []
            var invalidated = false
            for (index, response) in zip(pending, responses) {
                var result = outcome(response, job: jobs[index])
                if case .refreshTokenAndRetry(let reason) = result.outcome {
                    if now().timeIntervalSince(accessToken.issuedAt) < Self.freshTokenAge {
                        result.outcome = .configurationError(reason: reason)
                    } else {
                        if !invalidated {
                            await tokens.invalidate(accessToken)
                            invalidated = true
                        }
                        // Sent once more, at once, with the next token.
                        if sending == 1 { refused.append(index) }
                    }
                }
                results.append(result)
            }
            answers.withLock { answers in
                for (index, result) in zip(pending, results) { answers[index] = result }
            }
            pending = refused
        }
    }

    /// A message's length is its own (the path and the other headers are the same for every one).
    private static let uniqueHeaders = ["content-length"]

    private func outcome(_ response: Result<HTTP2Response, any Error>, job: ClaimedJob) -> PushSendResult {
        switch response {
        case .success(let answer):
            let error =
                answer.status == 200
                ? FCMResponseClassifier.ErrorBody() : FCMResponseClassifier.ErrorBody(parsing: Array(answer.body.readableBytesView))
            let retryAfter = WebPushResponseClassifier.retryAfter(answer.retryAfter, now: now().timeIntervalSince1970)
            let outcome = FCMResponseClassifier.classify(status: answer.status, error: error, retryAfterSeconds: retryAfter)
            if case .drop = outcome {
                logger.warning(
                    "FCM refused a message the gateway built",
                    metadata: ["push.id": "\(job.apnsID)", "push.reason": "\(error.reason ?? "")"])
            }
            return PushSendResult(status: answer.status, reason: error.reason, outcome: outcome)
        case .failure(HTTP2ConnectionError.timedOut):
            logger.warning("push request timed out", metadata: ["push.id": "\(job.apnsID)", "push.platform": "fcm"])
            return Self.timedOut
        case .failure(let error):
            // No answer (connect, TLS, reset): retried with backoff.
            logger.warning(
                "push request failed", metadata: ["push.id": "\(job.apnsID)", "push.platform": "fcm", "error.type": "\(type(of: error))"])
            return PushSendResult(status: 0, reason: "ConnectionError", outcome: .retry(reason: "ConnectionError"))
        }
    }

    /// Closes the connections (after the delivery worker stopped).
    public func shutdown() async {
        await transport.shutdown()
        try? await client.shutdown()
    }
}
