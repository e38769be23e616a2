public import NostrProtocol

/// The JSON object a linkstr rumor carries (docs/linkstr-wire.md §2): written with absent optionals
/// omitted, read leniently (unknown keys ignored, a missing `timestamp` taken as now) and
/// validated strictly per kind.
public struct LinkstrPayload: Sendable, Equatable {
    public var conversationID: String
    /// `""` for `root`; the target root id for `reaction` and `root_delete`; an operation id for
    /// the session kinds.
    public var rootID: String
    public var kind: PayloadKind
    public var url: String?
    public var note: String?
    public var timestamp: Int64
    public var sessionName: String?
    /// Lowercased, deduplicated 64-hex keys (session kinds).
    public var memberPubkeys: [String]?
    public var emoji: String?
    public var reactionActive: Bool?

    public init(
        conversationID: String, rootID: String = "", kind: PayloadKind, url: String? = nil, note: String? = nil,
        timestamp: Int64 = UnixTime.now(), sessionName: String? = nil, memberPubkeys: [String]? = nil, emoji: String? = nil,
        reactionActive: Bool? = nil
    ) {
        self.conversationID = conversationID
        self.rootID = rootID
        self.kind = kind
        self.url = url
        self.note = note
        self.timestamp = timestamp
        self.sessionName = sessionName
        self.memberPubkeys = memberPubkeys
        self.emoji = emoji
        self.reactionActive = reactionActive
    }

    // MARK: Writing

    /// The JSON the rumor's `content` carries. The note is trimmed and left out when empty.
    public var json: String {
        var fields: [String: JSONValue] = [
            "conversation_id": .string(conversationID), "root_id": .string(rootID), "kind": .string(kind.rawValue),
            "timestamp": .integer(timestamp),
        ]
        if let url { fields["url"] = .string(url) }
        if let note = note?.trimmingWhitespaceAndNewlines(), !note.isEmpty { fields["note"] = .string(note) }
        if let sessionName { fields["session_name"] = .string(sessionName) }
        if let memberPubkeys { fields["member_pubkeys"] = .array(memberPubkeys.map { .string($0) }) }
        if let emoji { fields["emoji"] = .string(emoji) }
        if let reactionActive { fields["reaction_active"] = .bool(reactionActive) }
        return JSONValue.object(fields).serialized
    }

    // MARK: Reading

    /// Decodes and validates `content`; `now` stands in for a missing `timestamp`.
    public static func decode(_ content: String, now: Int64 = UnixTime.now()) throws(PayloadError) -> LinkstrPayload {
        guard let value = try? JSONValue(parsing: content), case .object(let object) = value else { throw .notJSONObject }
        func string(_ key: String) throws(PayloadError) -> String? {
            guard let field = object[key], field != .null else { return nil }
            guard let text = field.stringValue else { throw .wrongType(field: key) }
            return text
        }
        guard let kindText = try string("kind") else { throw .missing(field: "kind") }
        guard let kind = PayloadKind(rawValue: kindText) else { throw .unknownKind(kindText) }
        guard let conversationID = try string("conversation_id") else { throw .missing(field: "conversation_id") }
        var timestamp = now
        if let field = object["timestamp"], field != .null {
            switch field {
            case .integer(let seconds): timestamp = seconds
            case .double(let seconds):
                // A whole number written with a fraction or an exponent (`1.7e9`) is still seconds;
                // one outside Int64 (`1e19`, or 2^63 written out) is refused, where `Int64(_:)` traps.
                guard let whole = Int64(exactly: seconds) else { throw .wrongType(field: "timestamp") }
                timestamp = whole
            default: throw .wrongType(field: "timestamp")
            }
        }
        var members: [String]?
        if let field = object["member_pubkeys"], field != .null {
            guard let list = field.arrayValue else { throw .wrongType(field: "member_pubkeys") }
            var seen = Set<String>()
            var cleaned: [String] = []
            for item in list {
                guard let key = item.stringValue else { throw .wrongType(field: "member_pubkeys") }
                let lowered = key.lowercased()
                guard lowered.utf8.count == 64, Hex.decode(lowered, count: 32) != nil else { throw .invalidMemberKey(key) }
                if seen.insert(lowered).inserted { cleaned.append(lowered) }
            }
            members = cleaned
        }
        var active: Bool?
        if let field = object["reaction_active"], field != .null {
            guard let flag = field.boolValue else { throw .wrongType(field: "reaction_active") }
            active = flag
        }
        let note = try string("note")?.trimmingWhitespaceAndNewlines()
        let payload = LinkstrPayload(
            conversationID: conversationID, rootID: try string("root_id") ?? "", kind: kind, url: try string("url"),
            note: (note?.isEmpty ?? true) ? nil : note, timestamp: timestamp, sessionName: try string("session_name"),
            memberPubkeys: members, emoji: try string("emoji"), reactionActive: active)
        try payload.validate()
        return payload
    }

    /// The per-kind rules of docs/linkstr-wire.md §2.
    public func validate() throws(PayloadError) {
        guard !conversationID.isBlank else { throw .blank(field: "conversation_id") }
        switch kind {
        case .root:
            guard let url, Self.isWebURL(url) else { throw .invalidURL }
        case .rootDelete, .sessionDelete:
            guard !rootID.isBlank else { throw .blank(field: "root_id") }
        case .sessionCreate:
            guard let sessionName else { throw .missing(field: "session_name") }
            guard !sessionName.isBlank else { throw .blank(field: "session_name") }
            guard let memberPubkeys, !memberPubkeys.isEmpty else { throw .missing(field: "member_pubkeys") }
        case .sessionMembers:
            guard let memberPubkeys, !memberPubkeys.isEmpty else { throw .missing(field: "member_pubkeys") }
        case .reaction:
            guard !rootID.isBlank else { throw .blank(field: "root_id") }
            guard let emoji else { throw .missing(field: "emoji") }
            guard !emoji.isBlank else { throw .blank(field: "emoji") }
            guard reactionActive != nil else { throw .missing(field: "reaction_active") }
        }
    }

    /// `http` or `https` with a non-empty host.
    static func isWebURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = lower.dropFirst(7)
        } else {
            return false
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@", omittingEmptySubsequences: false).last?.prefix { $0 != ":" } ?? ""
        return !host.isEmpty && !host.contains(" ")
    }
}

extension String {
    /// Empty or only whitespace (by `Character.isWhitespace`): what the wire calls blank.
    package var isBlank: Bool { allSatisfy(\.isWhitespace) }

    /// Without leading and trailing whitespace characters, as the wire trims a note or a name.
    package func trimmingWhitespaceAndNewlines() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
