/// Why a request body was refused: always a 400 with `message` as the body's `error`. The
/// messages are the contract's (the linkstr app shows some of them) or equally plain ones.
public struct RequestBodyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }

    /// The body is not a JSON object.
    public static let invalidJSON = RequestBodyError("invalid json body")
}
