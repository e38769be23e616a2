import Foundation

/// `PUSH_DEVICE_BUDGET`: how many alerts one device may get, as `ALERTS/SECONDS` (default `10/60`:
/// a burst of 10, refilled at 10 a minute), or `0` for no budget.
///
/// Anyone with a key can ask for a typed push to any pubkey, and anyone can publish wraps to it.
/// The budget bounds what that can do to one phone, whatever the number of senders, keys or
/// instances: it is kept in PostgreSQL, in the statement that queues the push.
public struct PushBudget: Sendable, Equatable {
    /// Tokens a full bucket holds.
    public var burst: Double
    /// Tokens added per second.
    public var perSecond: Double

    public init(alerts: Int, perSeconds: Int) {
        burst = Double(alerts)
        perSecond = Double(alerts) / Double(perSeconds)
    }

    public static let `default` = PushBudget(alerts: 10, perSeconds: 60)

    /// How long an untouched bucket takes to fill from empty: after that its row says nothing.
    public var refillSeconds: Double { burst / perSecond }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> PushBudget? {
        guard let text = env["PUSH_DEVICE_BUDGET"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return .default }
        if text == "0" { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let alerts = Int(parts[0]), (1...100_000).contains(alerts), let seconds = Int(parts[1]), (1...86_400).contains(seconds) else {
            throw ConfigurationError(key: "PUSH_DEVICE_BUDGET", "expected ALERTS/SECONDS (for example 10/60: a burst of 10, refilled at 10 a minute), or 0 for no budget")
        }
        return PushBudget(alerts: alerts, perSeconds: seconds)
    }
}
