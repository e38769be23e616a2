/// Where one relay connection is, for operators (`/readyz`, `/admin/status`) and for callers
/// that wait for a connection.
public enum RelayState: Sendable, Equatable {
    case idle
    case connecting
    case connected
    /// The relay asked for NIP-42 AUTH and the connection has no key to answer with, or the
    /// relay refused it.
    case authRequired
    /// The last attempt failed; the connection retries after a backoff.
    case failed(String)
    /// The address policy refused the relay's host (`RelayConfiguration.addressPolicy`); it is
    /// checked again after a long backoff.
    case refused(String)
    case stopped
}
