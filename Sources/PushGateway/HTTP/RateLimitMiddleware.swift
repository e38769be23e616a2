import Foundation
import Hummingbird

/// The per-IP limit, in front of every route: refused requests cost no body read, no JSON parse
/// and no signature check. Only the probes and documents an orchestrator or scraper polls are
/// exempt, and only in their exact spelling: any other spelling of a path (`//v1/push`) is
/// charged here first and then refused by `CanonicalPathMiddleware`.
struct RateLimitMiddleware: RouterMiddleware {
    static let exemptPaths: Set<String> = ["/healthz", "/readyz", "/metrics", "/openapi.yaml"]

    typealias Context = GatewayRequestContext

    let limiter: RateLimiter
    let trustForwardedFor: Bool
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !Self.exemptPaths.contains(request.uri.path) else { return try await next(request, context) }
        let address = Self.clientAddress(request, context: context, trustForwardedFor: trustForwardedFor)
        if let wait = limiter.take(address) {
            metrics.rateLimited(scope: "ip")
            throw APIError.rateLimited(retryAfter: wait)
        }
        return try await next(request, context)
    }

    /// The connection's peer, or with `RATE_LIMIT_TRUST_FORWARDED=1` the address the trusted proxy
    /// in front appended: the last entry of the last `X-Forwarded-For`. Earlier entries are
    /// whatever the client sent, so trusting them would let it pick a fresh bucket per request.
    /// A forwarded entry that is not an IP address counts under the peer address instead.
    static func clientAddress(_ request: Request, context: Context, trustForwardedFor: Bool) -> String {
        if trustForwardedFor, let forwarded = request.headers[values: .init("X-Forwarded-For")!].last,
            let last = forwarded.split(separator: ",").last, let key = ClientAddress.limiterKey(last.trimmingCharacters(in: .whitespaces))
        {
            return key
        }
        guard let peer = context.remoteAddress?.ipAddress else { return "unknown" }
        return ClientAddress.limiterKey(peer) ?? peer
    }
}
