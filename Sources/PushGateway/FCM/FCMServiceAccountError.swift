/// A service account key file that cannot be used.
public struct FCMServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
