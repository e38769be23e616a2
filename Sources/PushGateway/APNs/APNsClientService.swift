import AsyncHTTPClient
public import ServiceLifecycle

/// Owns the APNs HTTP client's lifetime: shuts it down after the delivery worker has stopped
/// (services stop in reverse order, so list it before the worker).
public struct APNsClientService: Service {
    let client: HTTPClient

    public init(sender: HTTP2APNsSender) { client = sender.client }

    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
