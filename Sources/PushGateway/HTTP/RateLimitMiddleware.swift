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

    /// The connection's peer, or behind a trusted proxy the address it appended
    /// (`ClientAddress.key`).
    static func clientAddress(_ request: Request, context: Context, trustForwardedFor: Bool) -> String {
        ClientAddress.key(
            peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[values: .init("X-Forwarded-For")!],
            trustForwardedFor: trustForwardedFor)
    }
}
