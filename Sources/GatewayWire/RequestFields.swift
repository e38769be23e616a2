public import NostrProtocol

/// Typed access to a JSON object body's fields, with the contract's trimming and messages.
public struct RequestFields: Sendable {
    public let object: [String: JSONValue]

    public init(object: [String: JSONValue]) { self.object = object }

    /// The fields of `body`, which must be one JSON object (NostrProtocol's strict parser).
    public init(parsing body: [UInt8]) throws(RequestBodyError) {
        guard case .object(let object)? = try? JSONValue(parsing: body) else { throw .invalidJSON }
        self.object = object
    }

    /// `value` trimmed. Text with a control character is refused: PostgreSQL cannot store NUL and
    /// APNs headers cannot carry CR or LF, and no linkstr id has one.
    private static func cleaned(_ value: String, key: String) throws(RequestBodyError) -> String {
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.containsControlCharacters else {
            throw RequestBodyError("invalid json body: \(key) must not contain control characters")
        }
        return trimmed
    }

    /// A trimmed string, or nil when absent, null or blank. A non-string, or one with a control
    /// character, is refused.
    public func string(_ key: String) throws(RequestBodyError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let value)?:
            let trimmed = try Self.cleaned(value, key: key)
            return trimmed.isEmpty ? nil : trimmed
        default: throw RequestBodyError("invalid json body: \(key) must be a string")
        }
    }

    /// A nested object's fields, or nil when absent or null; anything else is refused.
    public func object(_ key: String) throws(RequestBodyError) -> RequestFields? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let value)?: return RequestFields(object: value)
        default: throw RequestBodyError("invalid json body: \(key) must be an object")
        }
    }

    public func bool(_ key: String) throws(RequestBodyError) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw RequestBodyError("invalid json body: \(key) must be a boolean")
        }
    }

    /// Trimmed strings of an array, or nil when absent or null. Blanks are kept so callers can
    /// decide whether they are an error or dropped.
    public func stringList(_ key: String) throws(RequestBodyError) -> [String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            var values: [String] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard case .string(let value) = item else {
                    throw RequestBodyError("invalid json body: \(key) must be an array of strings")
                }
                values.append(try Self.cleaned(value, key: key))
            }
            return values
        default: throw RequestBodyError("invalid json body: \(key) must be an array of strings")
        }
    }
}

extension Array where Element == String {
    /// Blanks removed, duplicates removed, first occurrence order kept.
    func cleanedIDs() -> [String] {
        var seen = Set<String>()
        return filter { !$0.isEmpty && seen.insert($0).inserted }
    }
}
