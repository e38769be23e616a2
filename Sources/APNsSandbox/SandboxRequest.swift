/// One request as the sandbox received it.
public struct SandboxRequest: Sendable {
    public var method: String
    public var path: String
    /// Header names lower-cased, in arrival order (duplicates kept: Apple rejects them).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.path = path
        // HTTP/2 names arrive lower-cased (`HeaderBlockCheck` resets a stream with any other);
        // only a caller's of its own may need the work.
        let hasUpper = headers.contains { $0.name.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } }
        self.headers = hasUpper ? headers.map { ($0.name.lowercased(), $0.value) } : headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// What the sandbox answers, in Apple's terms.
public struct SandboxReply: Sendable, Equatable {
    public var status: Int
    /// Apple's `reason` (nil on 200).
    public var reason: String?
    /// 410 only: when the token became invalid, milliseconds since 1970.
    public var timestampMilliseconds: Int64?

    public init(status: Int, reason: String? = nil, timestampMilliseconds: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }

    public static let ok = SandboxReply(status: 200)
}
