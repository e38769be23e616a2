public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NostrProtocol

/// The OAuth access token every FCM send carries, shared by all of them: exchanged from a signed
/// assertion at the account's token endpoint, kept until 5 minutes before it expires, and
/// exchanged once however many sends ask at the same moment.
public actor FCMAccessTokenProvider {
    public struct AccessToken: Sendable, Equatable {
        public var value: String
        public var expiresAt: Date
        /// When it is replaced: `refreshMargin` before it expires, or half-way through a lifetime
        /// shorter than twice that (otherwise every send would exchange a new one).
        public var refreshAt: Date

        init(value: String, issuedAt: Date, lifetime: TimeInterval) {
            self.value = value
            expiresAt = issuedAt.addingTimeInterval(lifetime)
            refreshAt = expiresAt.addingTimeInterval(-min(FCMAccessTokenProvider.refreshMargin, lifetime / 2))
        }
    }

    let signer: FCMAssertionSigner
    let client: HTTPClient
    let tokenURL: String
    let logger: Logger
    let now: @Sendable () -> Date
    private var cached: AccessToken?
    private var pending: Task<AccessToken, any Error>?
    /// Exchanges made (for tests and `/admin/status`).
    public private(set) var exchanges = 0
    /// Why the last exchange failed, until one succeeds: an operator's problem to see.
    public private(set) var lastError: String?
    /// After a failed exchange, callers get its error until then instead of each asking again:
    /// with a revoked key, every queued job would otherwise hit the token endpoint.
    private var failure: (error: FCMTokenError, until: Date)?

    /// A token is replaced this long before it expires (half its lifetime when it is shorter).
    public static let refreshMargin: TimeInterval = 300
    /// How long a failed exchange's answer stands: a refusal a minute, anything else 5 seconds.
    static let refusalPause: TimeInterval = 60
    static let failurePause: TimeInterval = 5

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

    /// The current token: the cached one while it is fresh, otherwise a new exchange (one for
    /// all callers waiting at once).
    public func token() async throws(FCMTokenError) -> AccessToken {
        let date = now()
        if let cached, date < cached.refreshAt { return cached }
        if let failure, date < failure.until { throw failure.error }
        let task: Task<AccessToken, any Error>
        if let pending {
            task = pending
        } else {
            task = Task { try await self.exchange() }
            pending = task
        }
        do {
            let token = try await task.value
            if pending == task { pending = nil }
            return token
        } catch {
            if pending == task { pending = nil }
            throw error as? FCMTokenError ?? .unavailable("\(type(of: error))")
        }
    }

    /// Forgets `token` (FCM refused it): the next `token()` exchanges again.
    public func invalidate(_ token: AccessToken) {
        if cached == token { cached = nil }
    }

    private func exchange() async throws -> AccessToken {
        exchanges += 1
        let issuedAt = now()
        do {
            let token = try await Self.requestToken(
                assertion: try signer.assertion(issuedAt: issuedAt), url: tokenURL, client: client, issuedAt: issuedAt, logger: logger)
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
            // OAuth's error codes (RFC 6749 §5.2) are short ASCII words; anything else is not repeated.
            let code = json?["error"]?.stringValue.flatMap { FCMResponseClassifier.token($0) } ?? "HTTP \(status)"
            // 4xx: the account or its key was refused, which waiting will not mend.
            if (400..<500).contains(status) && status != 429 { throw .rejected(code) }
            throw .unavailable(code)
        }
        guard let value = json?["access_token"]?.stringValue, !value.isEmpty, value.utf8.count <= 4096,
            let seconds = json?["expires_in"]?.integerValue, seconds > 0
        else { throw .unavailable("token endpoint answered without access_token and expires_in") }
        return AccessToken(value: value, issuedAt: issuedAt, lifetime: TimeInterval(seconds))
    }
}

/// Why no access token could be had.
public enum FCMTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The token endpoint refused the account (a revoked key, a deleted account): the operator's
    /// configuration, not something retrying mends.
    case rejected(String)
    /// The endpoint could not be reached or answered 429/5xx: try again later.
    case unavailable(String)

    public var description: String {
        switch self {
        case .rejected(let reason): "token exchange refused: \(reason)"
        case .unavailable(let reason): "token exchange failed: \(reason)"
        }
    }
}
