/// A relay's WebSocket URL in its normal form, so that two spellings of one relay are one relay:
/// scheme and host lowercased, the scheme's default port and a trailing slash removed
/// (`WSS://Relay.Example:443/` is `wss://relay.example`). Two equal values name the same relay.
///
/// Parsing is strict, because the URL comes from someone else (a registration, a relay list) and
/// is then connected to: `ws` or `wss` only, an ASCII host name or dotted IPv4 address, no user
/// info, no fragment, at most `maxLength` bytes as written and in normal form. IPv6 literals
/// (`[…]`) are refused, as `URLHost` explains.
public struct RelayURL: Sendable, Hashable, Comparable, CustomStringConvertible {
    public typealias Host = URLHost

    public static let maxLength = 512

    public let isSecure: Bool
    public let host: Host
    /// Nil when it is the scheme's default.
    public let port: Int?
    /// Empty, or from `/`, without trailing slashes; the query, if any, included.
    public let pathAndQuery: String
    /// The normal form.
    public let description: String

    public init(_ text: some StringProtocol) throws(RelayURLError) {
        let text = String(text).trimmingWhitespace()
        guard !text.isEmpty else { throw .empty }
        guard text.utf8.count <= Self.maxLength else { throw .tooLong }
        let parts: URLHost.Parts
        do {
            parts = try URLHost.split(text) { ["ws": 80, "wss": 443][$0] }
        } catch {
            throw RelayURLError(error)
        }
        isSecure = parts.scheme == "wss"
        (host, port) = (parts.host, parts.port)
        var pathAndQuery = parts.pathAndQuery
        if pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
        // Every trailing slash: removing one would leave `/a//` a different URL from its own
        // normal form `/a/`.
        while !pathAndQuery.contains("?"), pathAndQuery.hasSuffix("/") { pathAndQuery.removeLast() }
        self.pathAndQuery = pathAndQuery
        let normal = parts.scheme + "://" + host.description + (port.map { ":\($0)" } ?? "") + pathAndQuery
        // The limit holds for the normal form too, which can be a byte longer (`?q` becomes
        // `/?q`): a URL accepted here must parse again from its own normal form.
        guard normal.utf8.count <= Self.maxLength else { throw .tooLong }
        description = normal
    }

    public static func < (lhs: RelayURL, rhs: RelayURL) -> Bool { lhs.description < rhs.description }

    public static func == (lhs: RelayURL, rhs: RelayURL) -> Bool { lhs.description == rhs.description }

    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}

/// Why a relay URL was refused; the description is safe to return to whoever sent it.
public enum RelayURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLong
    case notASCII
    case notWebSocket
    case userInfo
    case fragment
    case badHost
    case ipv6Host
    case badPort
    case badPath

    init(_ error: URLHost.SplitError) {
        self =
            switch error {
            case .notASCII: .notASCII
            case .badScheme: .notWebSocket
            case .fragment: .fragment
            case .userInfo: .userInfo
            case .badHost: .badHost
            case .ipv6Host: .ipv6Host
            case .badPort: .badPort
            case .badPath: .badPath
            }
    }

    public var description: String {
        switch self {
        case .empty: "is empty"
        case .tooLong: "is longer than \(RelayURL.maxLength) bytes"
        case .notASCII: "must be ASCII without spaces (internationalised names in their xn-- form)"
        case .notWebSocket: "must start with ws:// or wss://"
        case .userInfo: "must not carry a user name or password"
        case .fragment: "must not have a fragment (#)"
        case .badHost: "has no valid host name or IP address"
        case .ipv6Host: "names an IPv6 address, which cannot be connected to; use a host name"
        case .badPort: "has an invalid port"
        case .badPath: "has characters a URL path cannot hold"
        }
    }
}
