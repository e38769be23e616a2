import NostrProtocol

/// Reconnect delays: exponential from `base` up to `cap`, each with up to `jitter` of random
/// extra so that many instances do not reconnect to a relay in lock-step.
public struct RelayBackoff: Sendable, Equatable {
    public var base: Duration
    public var cap: Duration
    public var jitter: Double

    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(60), jitter: Double = 0.25) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// Delay before attempt `failures + 1`, where `failures` ≥ 1 counts consecutive failures.
    public func delay(afterFailures failures: Int, random: Double = Double.random(in: 0..<1)) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        let seconds = min(base.inSeconds * Double(1 << exponent), cap.inSeconds) * (1 + jitter * random)
        return .milliseconds(Int64(seconds * 1000))
    }
}
