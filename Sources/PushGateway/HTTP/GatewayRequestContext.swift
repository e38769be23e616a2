public import Hummingbird
public import NIOCore

/// The gateway's request context: Hummingbird's core storage plus the peer address, which the
/// per-IP rate limit needs.
public struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
