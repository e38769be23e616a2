/// Why a relay-protocol message could not be read.
public enum RelayMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    case json(JSONError)
    case notAnArray
    case unknownType(String)
    case malformed(String)
    case event(EventDecodingError)

    public var description: String {
        switch self {
        case .json(let error): "invalid JSON: \(error)"
        case .notAnArray: "message is not a JSON array"
        case .unknownType(let type): "unknown message type \(type)"
        case .malformed(let detail): "malformed message: \(detail)"
        case .event(let error): "malformed event: \(error)"
        }
    }
}
