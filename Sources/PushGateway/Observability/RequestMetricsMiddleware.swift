public import Hummingbird

/// Counts every request by route template (never the raw path, so labels stay bounded), method
/// and status, and every refused `Authorization` by reason.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics

    public init(metrics: GatewayMetrics) { self.metrics = metrics }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            metrics.request(route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: response.status.code)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.request(route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: status)
            if let code = (error as? APIError)?.authFailureCode { metrics.authFailure(reason: code) }
            throw error
        }
    }
}
