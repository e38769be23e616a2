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
