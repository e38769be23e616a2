public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NostrProtocol

/// The OAuth access token every FCM send carries, shared by all of them: exchanged from a signed
/// assertion at the account's token endpoint, exchanged once however many sends ask at the same
/// moment, and replaced 5 minutes before it expires.
///
/// The replacement happens behind the sends: while the current token is still valid they go on
/// using it, and a failed exchange costs nothing until the token has actually expired. Only a
/// caller with no valid token waits for an exchange.
public actor FCMAccessTokenProvider {
    public struct AccessToken: Sendable, Equatable, CustomStringConvertible {
        public var value: String
        public var issuedAt: Date
        public var expiresAt: Date
        /// When it is replaced: `refreshMargin` before it expires, or half-way through a lifetime
        /// shorter than twice that (otherwise every send would exchange a new one).
        public var refreshAt: Date

        init(value: String, issuedAt: Date, lifetime: TimeInterval) {
            self.value = value
            self.issuedAt = issuedAt
            expiresAt = issuedAt.addingTimeInterval(lifetime)
            refreshAt = expiresAt.addingTimeInterval(-min(FCMAccessTokenProvider.refreshMargin, lifetime / 2))
        }

        /// Never the bearer value: a token in a log line is a credential handed out.
        public var description: String { "AccessToken(expiresAt: \(expiresAt))" }
    }

    let signer: FCMAssertionSigner
    let client: HTTPClient
    let tokenURL: String
    let logger: Logger
    let now: @Sendable () -> Date
    private var cached: AccessToken?
    private var pending: Task<AccessToken, any Error>?
    /// Exchanges made (the tests count them).
    public private(set) var exchanges = 0
    /// Why the last exchange failed, until one succeeds.
    public private(set) var lastError: String?
    /// After a failed exchange, callers without a valid token get its error until then instead of
    /// each asking again: with a revoked key, every queued job would otherwise hit the endpoint.
    private var failure: (error: FCMTokenError, until: Date)?

    /// A token is replaced this long before it expires (half its lifetime when it is shorter).
    public static let refreshMargin: TimeInterval = 300
    /// How long a failed exchange's answer stands: a refusal a minute, anything else 5 seconds.
    static let refusalPause: TimeInterval = 60
    static let failurePause: TimeInterval = 5
    /// The longest lifetime believed (Google's is an hour): a token endpoint cannot pin one forever.
    static let maxLifetime: TimeInterval = 86_400

    public init(
        signer: FCMAssertionSigner, client: HTTPClient, tokenURL: String, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.signer = signer
        self.client = client
        self.tokenURL = tokenURL
        self.logger = logger
        self.now = now
    }

    /// A valid token: the cached one (starting its replacement in the background once it is
    /// due), or, when there is none, a new exchange that every caller waiting at once shares.
    public func token() async throws(FCMTokenError) -> AccessToken {
        let date = now()
        let paused = failure.map { date < $0.until } ?? false
        if let cached, date < cached.expiresAt {
            if date >= cached.refreshAt, pending == nil, !paused { _ = startExchange() }
            return cached
        }
        if paused, let failure, pending == nil { throw failure.error }
        let task = pending ?? startExchange()
        do {
            return try await task.value
        } catch {
            throw error as? FCMTokenError ?? .unavailable("\(type(of: error))")
        }
    }

    /// Forgets `token` (FCM refused it): the next `token()` exchanges again.
    public func invalidate(_ token: AccessToken) {
        if cached == token { cached = nil }
    }

    private func startExchange() -> Task<AccessToken, any Error> {
        let task = Task { try await self.exchange() }
        pending = task
        return task
    }

    private func exchange() async throws -> AccessToken {
        defer { pending = nil }
        exchanges += 1
        let issuedAt = now()
        do {
            let assertion: String
            do { assertion = try signer.assertion(issuedAt: issuedAt) } catch { throw FCMTokenError.rejected("AssertionSigningFailed") }
            let token = try await Self.requestToken(assertion: assertion, url: tokenURL, client: client, issuedAt: issuedAt, logger: logger)
            cached = token
            lastError = nil
            failure = nil
            return token
        } catch let error as FCMTokenError {
            lastError = error.description
            let pause = if case .rejected = error { Self.refusalPause } else { Self.failurePause }
            failure = (error, now().addingTimeInterval(pause))
            logger.error("FCM access token exchange failed", metadata: ["push.reason": "\(error)"])
            throw error
        }
    }

    /// OAuth's error codes (RFC 6749 §5.2); another is reported as `other`.
    static let oauthErrors: Set<String> = [
        "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
        "access_denied",
    ]

    /// One JWT-bearer exchange (RFC 7523 §2.1): `grant_type` and `assertion`, form-encoded.
    static func requestToken(assertion: String, url: String, client: HTTPClient, issuedAt: Date, logger: Logger) async throws(FCMTokenError)
        -> AccessToken
    {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        // An assertion is base64url and dots: nothing in it needs escaping.
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let status: Int
        let body: ByteBuffer
        do {
            let response = try await client.execute(request, timeout: .seconds(10), logger: logger)
            status = Int(response.status.code)
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw .unavailable("token endpoint unreachable (\(type(of: error)))")
        }
        let json = try? JSONValue(parsing: Array(buffer: body))
        guard status == 200 else {
            let code = json?["error"]?.stringValue.map { oauthErrors.contains($0) ? $0 : "other" } ?? "HTTP \(status)"
            // 4xx: the account or its key was refused, which waiting will not mend.
            if (400..<500).contains(status) && status != 429 { throw .rejected(code) }
            throw .unavailable(code)
        }
        guard let value = json?["access_token"]?.stringValue, !value.isEmpty, value.utf8.count <= 4096,
            let seconds = json?["expires_in"]?.integerValue, seconds > 0
        else { throw .unavailable("token endpoint answered without access_token and expires_in") }
        return AccessToken(value: value, issuedAt: issuedAt, lifetime: min(TimeInterval(seconds), maxLifetime))
    }
}
