/// A NIP-01 subscription filter. Conditions inside one filter are ANDed; a REQ with several
/// filters matches an event that any of them matches.
public struct Filter: Sendable, Hashable {
    public var ids: [EventID]?
    public var authors: [PublicKey]?
    public var kinds: [UInt16]?
    /// Single-letter tag queries, keyed by the letter without `#` (`"p"` for `#p`).
    public var tags: [String: [String]]
    public var since: Int64?
    public var until: Int64?
    /// Initial query only: the newest `limit` stored events.
    public var limit: Int?

    public init(
        ids: [EventID]? = nil, authors: [PublicKey]? = nil, kinds: [UInt16]? = nil, tags: [String: [String]] = [:],
        since: Int64? = nil, until: Int64? = nil, limit: Int? = nil
    ) {
        self.ids = ids
        self.authors = authors
        self.kinds = kinds
        self.tags = tags
        self.since = since
        self.until = until
        self.limit = limit
    }

    /// Whether `event` satisfies every condition (`limit` does not apply to single events).
    public func matches(_ event: NostrEvent) -> Bool {
        if let ids, !ids.contains(event.id) { return false }
        if let authors, !authors.contains(event.pubkey) { return false }
        if let kinds, !kinds.contains(event.kind) { return false }
        if let since, event.createdAt < since { return false }
        if let until, event.createdAt > until { return false }
        for (letter, values) in tags {
            // Relays index a tag's first value only.
            let found = event.tags.contains { tag in tag.count > 1 && tag[0] == letter && values.contains(tag[1]) }
            if !found { return false }
        }
        return true
    }

    /// Compact JSON in rust-nostr's key order: ids, authors, kinds, since, until, limit, then `#x` sorted.
    public var json: String {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.string
    }

    func write(to writer: inout JSONWriter) {
        writer.byte(UInt8(ascii: "{"))
        var first = true
        func key(_ name: String, _ writer: inout JSONWriter) {
            if !first { writer.byte(UInt8(ascii: ",")) }
            first = false
            writer.string(name)
            writer.byte(UInt8(ascii: ":"))
        }
        if let ids {
            key("ids", &writer)
            writer.stringArray(ids.map(\.hex))
        }
        if let authors {
            key("authors", &writer)
            writer.stringArray(authors.map(\.hex))
        }
        if let kinds {
            key("kinds", &writer)
            writer.byte(UInt8(ascii: "["))
            for (i, kind) in kinds.enumerated() {
                if i > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.integer(kind)
            }
            writer.byte(UInt8(ascii: "]"))
        }
        if let since {
            key("since", &writer)
            writer.integer(since)
        }
        if let until {
            key("until", &writer)
            writer.integer(until)
        }
        if let limit {
            key("limit", &writer)
            writer.integer(limit)
        }
        for letter in tags.keys.sorted() {
            key("#" + letter, &writer)
            writer.stringArray(tags[letter]!)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    public init(json: String) throws(RelayMessageError) {
        do { try self.init(jsonValue: try JSONValue(parsing: json)) } catch let error as RelayMessageError {
            throw error
        } catch {
            throw .json(error as! JSONError)
        }
    }

    /// Reads a filter object. Unknown keys (for example NIP-50 `search`) are ignored.
    public init(jsonValue: JSONValue) throws(RelayMessageError) {
        guard case .object(let object) = jsonValue else { throw .malformed("filter must be an object") }
        self.init()
        for (key, value) in object {
            switch key {
            case "ids":
                ids = try Self.strings(value, key).map { (s) throws(RelayMessageError) in
                    guard let id = try? EventID(hex: s) else { throw .malformed("ids must be 64-character lowercase hex") }
                    return id
                }
            case "authors":
                authors = try Self.strings(value, key).map { (s) throws(RelayMessageError) in
                    guard Hex.decode(s, count: 32) != nil, let key = try? PublicKey(hex: s) else {
                        throw .malformed("authors must be 64-character lowercase hex public keys")
                    }
                    return key
                }
            case "kinds":
                guard case .array(let items) = value else { throw .malformed("kinds must be an array") }
                kinds = try items.map { (item) throws(RelayMessageError) in
                    guard let number = item.integerValue, let kind = UInt16(exactly: number) else {
                        throw .malformed("kinds must be integers in 0...65535")
                    }
                    return kind
                }
            case "since": since = try Self.integer(value, key)
            case "until": until = try Self.integer(value, key)
            case "limit":
                guard let limit = Int(exactly: try Self.integer(value, key)), limit >= 0 else {
                    throw .malformed("limit must not be negative")
                }
                self.limit = limit
            default:
                if key.hasPrefix("#"), key.count == 2 {
                    tags[String(key.dropFirst())] = try Self.strings(value, key)
                }
            }
        }
    }

    private static func strings(_ value: JSONValue, _ key: String) throws(RelayMessageError) -> [String] {
        guard case .array(let items) = value else { throw .malformed("\(key) must be an array of strings") }
        return try items.map { (item) throws(RelayMessageError) in
            guard case .string(let s) = item else { throw .malformed("\(key) must be an array of strings") }
            return s
        }
    }

    private static func integer(_ value: JSONValue, _ key: String) throws(RelayMessageError) -> Int64 {
        guard case .integer(let number) = value else { throw .malformed("\(key) must be an integer") }
        return number
    }
}
