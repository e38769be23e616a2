import AsyncHTTPClient
public import ServiceLifecycle

/// Owns the APNs HTTP clients' lifetime: shuts them down after the delivery worker has stopped
/// (services stop in reverse order, so list it before the worker).
public struct APNsClientService: Service {
    let clients: [HTTPClient]

    public init(sender: HTTP2APNsSender) { clients = sender.clients }

    public func run() async throws {
        try? await gracefulShutdown()
        for client in clients { try await client.shutdown() }
    }
}
