/// A setting that stops start-up, with the key it concerns.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let problem: String

    public init(key: String, _ problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "\(key): \(problem)" }
}

extension ConfigurationError {
    /// `env[key]` as an on/off switch: `1`, `true` or `yes` (any case) is on; anything else off.
    static func flag(_ env: [String: String], _ key: String) -> Bool {
        ["1", "true", "yes"].contains(env[key]?.lowercased() ?? "")
    }

    /// `env[key]` as an integer in `range`; `value` when unset or empty; otherwise an error that
    /// names the key and the range.
    static func integer(_ env: [String: String], _ key: String, _ range: ClosedRange<Int>, default value: Int) throws(ConfigurationError)
        -> Int
    {
        guard let text = env[key], !text.isEmpty else { return value }
        guard let parsed = Int(text), range.contains(parsed) else {
            throw ConfigurationError(key: key, "an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return parsed
    }
}
