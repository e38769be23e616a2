/// Why a payload was refused (the message is dropped), one case per rule of docs/linkstr-wire.md §2.
public enum PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    case notJSONObject
    case wrongType(field: String)
    case unknownKind(String)
    case missing(field: String)
    case blank(field: String)
    case invalidURL
    case invalidMemberKey(String)

    public var description: String {
        switch self {
        case .notJSONObject: "payload is not a JSON object"
        case .wrongType(let field): "\(field) has the wrong type"
        case .unknownKind(let kind): "unknown kind \(kind)"
        case .missing(let field): "\(field) is required"
        case .blank(let field): "\(field) must not be blank"
        case .invalidURL: "url must be http(s) with a host"
        case .invalidMemberKey(let key): "member_pubkeys entry \(key.prefix(16)) is not a 64-character hex key"
        }
    }
}
