/// `postgres://user:pass@host:port/db` (also `postgresql://`), with `?sslmode=disable|prefer|require`.
public struct DatabaseURL: Sendable, Equatable {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String, tls: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    public init(parsing text: String) throws(ConfigurationError) {
        func fail(_ why: String) -> ConfigurationError { ConfigurationError(key: "DATABASE_URL", why) }
        var rest: Substring
        if text.hasPrefix("postgres://") {
            rest = text.dropFirst("postgres://".count)
        } else if text.hasPrefix("postgresql://") {
            rest = text.dropFirst("postgresql://".count)
        } else {
            throw fail("must start with postgres:// or postgresql://")
        }
        var tls = TLSMode.disable
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.first == "sslmode" {
                    guard parts.count == 2, let mode = TLSMode(rawValue: parts[1] == "verify-full" ? "require" : parts[1]) else {
                        throw fail("sslmode must be disable, prefer, require or verify-full")
                    }
                    tls = mode
                }
            }
            rest = rest[..<question]
        }
        guard let at = rest.lastIndex(of: "@") else { throw fail("missing user@host") }
        let credentials = rest[..<at]
        let location = rest[rest.index(after: at)...]
        let userParts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map {
            Self.percentDecode(String($0))
        }
        guard let user = userParts.first, !user.isEmpty else { throw fail("missing user name") }
        guard let slash = location.firstIndex(of: "/") else { throw fail("missing /database") }
        let hostPort = location[..<slash]
        let database = Self.percentDecode(String(location[location.index(after: slash)...]))
        guard !database.isEmpty else { throw fail("missing database name") }
        var host = String(hostPort)
        var port = 5432
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
            guard let parsed = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(parsed) else {
                throw fail("invalid port")
            }
            port = parsed
            host = String(hostPort[..<colon])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw fail("missing host") }
        self.init(host: host, port: port, username: user, password: userParts.count > 1 ? userParts[1] : nil, database: database, tls: tls)
    }

    /// The URL without the password, for logs.
    public var redacted: String { "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)" }

    private static func percentDecode(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
