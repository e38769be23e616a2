import Hummingbird
import NIOCore
import NostrProtocol

/// JSON request and response bodies, through NostrProtocol's strict parser and writer.
enum JSONBody {
    static func object(_ fields: [String: JSONValue]) -> String { JSONValue.object(fields).serialized }

    static func response(_ status: HTTPResponse.Status, _ fields: [String: JSONValue]) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: object(fields))))
    }

    /// Parses a request body that must be a JSON object.
    static func parseObject(_ bytes: [UInt8]) throws(APIError) -> [String: JSONValue] {
        guard case .object(let object)? = try? JSONValue(parsing: bytes) else { throw .invalidJSON }
        return object
    }
}

/// Typed access to request fields with the contract's trimming and error messages.
struct RequestFields {
    let object: [String: JSONValue]

    /// `value` trimmed. Text with a control character is a 400: PostgreSQL cannot store NUL and
    /// APNs headers cannot carry CR or LF, and no linkstr id has one.
    private static func cleaned(_ value: String, key: String) throws(APIError) -> String {
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.containsControlCharacters else { throw .badRequest("invalid json body: \(key) must not contain control characters") }
        return trimmed
    }

    /// A trimmed string, or nil when absent, null or blank. A non-string, or one with a control
    /// character, is a 400.
    func string(_ key: String) throws(APIError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let value)?:
            let trimmed = try Self.cleaned(value, key: key)
            return trimmed.isEmpty ? nil : trimmed
        default: throw .badRequest("invalid json body: \(key) must be a string")
        }
    }

    func bool(_ key: String) throws(APIError) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw .badRequest("invalid json body: \(key) must be a boolean")
        }
    }

    /// Trimmed strings of an array, or nil when absent or null. Blanks are kept so callers can
    /// decide whether they are an error or dropped.
    func stringList(_ key: String) throws(APIError) -> [String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            var values: [String] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard case .string(let value) = item else { throw .badRequest("invalid json body: \(key) must be an array of strings") }
                values.append(try Self.cleaned(value, key: key))
            }
            return values
        default: throw .badRequest("invalid json body: \(key) must be an array of strings")
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
