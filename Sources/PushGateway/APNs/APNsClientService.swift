public import ServiceLifecycle

/// Owns the APNs connections' lifetime: closes them after the delivery worker has stopped
/// (services stop in reverse order, so list it before the worker).
public struct APNsClientService: Service {
    let sender: HTTP2APNsSender

    public init(sender: HTTP2APNsSender) { self.sender = sender }

    public func run() async throws {
        try? await gracefulShutdown()
        await sender.shutdown()
    }
}
