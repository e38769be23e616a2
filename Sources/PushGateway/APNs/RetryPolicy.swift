import Foundation

/// Delivery retry schedule: 2, 4, 8, 16, 32, then every 60 seconds, each with up to 20 % random
/// jitter so that a burst of failures does not retry in lock-step. Jobs stop at their expiry.
public struct RetryPolicy: Sendable {
    public var baseSeconds: Double = 2
    public var capSeconds: Double = 60
    public var jitterFraction: Double = 0.2

    public init() {}

    /// Delay before attempt `attempt + 1`, where `attempt` counts attempts made (≥ 1).
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0..<1)) -> Double {
        let exponent = min(max(attempt - 1, 0), 30)
        let base = min(baseSeconds * pow(2, Double(exponent)), capSeconds)
        return base * (1 + jitterFraction * random)
    }
}
