/// A parsed JSON value. Integers are kept apart from other numbers so that fields such as
/// `created_at` can insist on a plain integer.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number with a fraction or exponent, or an integer outside Int64.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var integerValue: Int64? { if case .integer(let i) = self { i } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }

    /// Parses `text` strictly (RFC 8259; duplicate object keys refused).
    public init(parsing text: String) throws(JSONError) {
        self = try JSONParser.parse(Array(text.utf8))
    }

    public init(parsing bytes: [UInt8]) throws(JSONError) {
        self = try JSONParser.parse(bytes)
    }

    /// Compact JSON with NIP-01 string escaping; object keys sorted for determinism.
    public var serialized: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.string
    }
}

/// Why text is not acceptable JSON.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements) { _, last in last }) }
    public init(nilLiteral: ()) { self = .null }
}
