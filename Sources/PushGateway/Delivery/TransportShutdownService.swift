public import ServiceLifecycle

/// Owns a transport's connections' lifetime: closes them after the delivery worker has stopped
/// (services stop in reverse order, so list it before the worker).
public struct TransportShutdownService: Service {
    let close: @Sendable () async -> Void

    public init(close: @escaping @Sendable () async -> Void) { self.close = close }

    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}
