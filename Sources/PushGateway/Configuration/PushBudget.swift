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

    /// The data-modifying CTE body that takes one token from the budget of each device in
    /// `source` (a CTE with a `device_token` column), for the statement that queues a typed push;
    /// the placeholders name their parameters: whether a budget applies, the burst, the refill a
    /// second. It returns the charged tokens. A device without a row starts full. The refill is
    /// recomputed on the row as it is when locked, so two statements at once cannot both take a
    /// device's last token; elapsed time never counts negative and `updated_at` never moves back.
    /// (The relay watcher's and the inbox's statements charge in the upsert that also moves the
    /// device's coalescing window: `RecordWrapsStatement.steps`.)
    static func chargeSQL(devicesFrom source: String, enabled: String, burst: String, perSecond: String) -> String {
        let refilled = refilledSQL(burst: burst, perSecond: perSecond)
        return """
            INSERT INTO device_pacing AS b (device_token, tokens, updated_at)
            SELECT device_token, \(burst) - 1, now() FROM \(source) WHERE \(enabled) ORDER BY device_token
            ON CONFLICT (device_token) DO UPDATE SET tokens = \(refilled) - 1, updated_at = greatest(b.updated_at, now())
                WHERE \(refilled) >= 1
            RETURNING device_token
            """
    }

    /// The tokens of the `device_pacing` row `b` now: refilled since its last charge, up to the
    /// burst.
    static func refilledSQL(burst: String, perSecond: String) -> String {
        "least(\(burst), b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * \(perSecond))"
    }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> PushBudget? {
        guard let text = env["PUSH_DEVICE_BUDGET"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return .default }
        if text == "0" { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let alerts = Int(parts[0]), (1...100_000).contains(alerts), let seconds = Int(parts[1]),
            (1...86_400).contains(seconds)
        else {
            throw ConfigurationError(
                key: "PUSH_DEVICE_BUDGET",
                "expected ALERTS/SECONDS (for example 10/60: a burst of 10, refilled at 10 a minute), or 0 for no budget")
        }
        return PushBudget(alerts: alerts, perSeconds: seconds)
    }
}
