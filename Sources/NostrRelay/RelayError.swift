/// Why a publish or a connection failed.
public enum RelayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No OK within the timeout.
    case timeout
    /// The outbound queue is full (the relay is not keeping up or not connected for long).
    case queueFull
    /// The connection closed before the relay answered.
    case disconnected
    /// The relay closed the connection (cleanly or not).
    case closedByRelay
    /// The relay sent something that is not a NIP-01 message.
    case protocolViolation(String)
    /// The connection hung up on a relay that broke one of its `RelayLimits`.
    case limitExceeded(RelayTraffic.Breach)
    /// The connection service has stopped.
    case stopped
    /// The relay's host name resolves to no address (checked for an address policy).
    case noAddress
    /// `RelayConfiguration.addressPolicy` refused where the URL leads (the policy's reason).
    case refusedAddress(String)

    public var description: String {
        switch self {
        case .timeout: "no OK from the relay in time"
        case .queueFull: "outbound queue full"
        case .disconnected: "connection closed before the relay answered"
        case .closedByRelay: "the relay closed the connection"
        case .protocolViolation(let what): "relay protocol violation: \(what)"
        case .limitExceeded(.flood): "the relay sent more messages than the limit allows"
        case .limitExceeded(.invalid): "the relay sent too many invalid events"
        case .stopped: "relay connection stopped"
        case .noAddress: "the relay's host name has no address"
        case .refusedAddress(let reason): "the relay's host \(reason)"
        }
    }
}
