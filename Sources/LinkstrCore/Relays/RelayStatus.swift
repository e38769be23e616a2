/// A relay's status as the relay screen shows it.
public enum RelayStatus: Sendable, Equatable {
    case disabled
    case connecting
    case connected
    /// Connected, but the relay refused our writes (`restricted:`, `blocked:`, `auth-required:`).
    case readOnly(String)
    case failed(String)

    /// Counts toward the `connected_or_readonly / total` header figure.
    public var isConnectedOrReadOnly: Bool {
        switch self {
        case .connected, .readOnly: true
        default: false
        }
    }

    public var label: String {
        switch self {
        case .disabled: "disabled"
        case .connecting: "connecting"
        case .connected: "connected"
        case .readOnly: "read-only"
        case .failed: "failed"
        }
    }

    public var errorText: String? {
        switch self {
        case .readOnly(let text), .failed(let text): text
        default: nil
        }
    }
}
