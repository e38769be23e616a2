import Hummingbird

/// The per-IP limit, in front of every `/v1/` route: refused requests cost no body read, no JSON
/// parse and no signature check. Health, readiness, metrics and the OpenAPI document are exempt.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    let limiter: RateLimiter
    let trustForwardedFor: Bool
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path.hasPrefix("/v1/") else { return try await next(request, context) }
        let address = clientAddress(request, context: context)
        if let wait = limiter.take(address) {
            metrics.rateLimited(scope: "ip")
            throw APIError.rateLimited(retryAfter: wait)
        }
        return try await next(request, context)
    }

    private func clientAddress(_ request: Request, context: Context) -> String {
        if trustForwardedFor, let forwarded = request.headers[.init("X-Forwarded-For")!],
           let first = forwarded.split(separator: ",").first?.trimmingCharacters(in: .whitespaces), !first.isEmpty {
            return first
        }
        return context.remoteAddress?.ipAddress ?? "unknown"
    }
}
