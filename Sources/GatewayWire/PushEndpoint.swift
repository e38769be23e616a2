public import NostrProtocol

/// A Web Push or UnifiedPush endpoint: the URL the gateway POSTs a device's messages to. It comes
/// from a client, so it is parsed as strictly as a relay URL: `https` only, an ASCII host name or
/// dotted IPv4 address, no user info or fragment, at most `maxLength` bytes. Whether its host is
/// public is the gateway's judgement (`RelayAddressPolicy`), as for relays. The text is kept as
/// written apart from the scheme and host's case: a push service may read every byte of its path.
public struct PushEndpoint: Sendable, Hashable, CustomStringConvertible {
    public static let maxLength = 1_024

    public let host: URLHost
    /// Nil when it is 443.
    public let port: Int?
    /// From `/`, with the query if any.
    public let pathAndQuery: String
    public let description: String

    public init(_ text: some StringProtocol) throws(RequestBodyError) {
        let text = String(text)
        guard text.utf8.count <= Self.maxLength else { throw Self.refused("is longer than \(Self.maxLength) bytes") }
        guard text.allSatisfy({ $0.isASCII && !$0.isWhitespace }), !text.containsControlCharacters else {
            throw Self.refused("must be ASCII without spaces")
        }
        guard let separator = text.firstRange(of: "://"), text[..<separator.lowerBound].lowercased() == "https" else {
            throw Self.refused("must start with https://")
        }
        let rest = text[separator.upperBound...]
        guard !rest.contains("#") else { throw Self.refused("must not have a fragment (#)") }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else { throw Self.refused("must not carry a user name or password") }
        do {
            (host, port) = try URLHost.parseAuthority(authority, defaultPort: 443)
        } catch {
            switch error {
            case .badHost: throw Self.refused("has no valid host name or IP address")
            case .ipv6Host: throw Self.refused("names an IPv6 address; use a host name")
            case .badPort: throw Self.refused("has an invalid port")
            }
        }
        var pathAndQuery = String(rest[authorityEnd...])
        guard pathAndQuery.allSatisfy({ URLHost.pathCharacters.contains($0) }) else {
            throw Self.refused("has characters a URL path cannot hold")
        }
        if !pathAndQuery.hasPrefix("/") { pathAndQuery = "/" + pathAndQuery }
        self.pathAndQuery = pathAndQuery
        description = "https://" + host.description + (port.map { ":\($0)" } ?? "") + pathAndQuery
        // The normal form can be a byte longer (a `/` before a bare query): it must parse again.
        guard description.utf8.count <= Self.maxLength else { throw Self.refused("is longer than \(Self.maxLength) bytes") }
    }

    /// `scheme://host[:port]`: the audience a VAPID token names (RFC 8292 §2).
    public var origin: String { "https://" + host.description + (port.map { ":\($0)" } ?? "") }

    private static func refused(_ reason: String) -> RequestBodyError { RequestBodyError("endpoint \(reason)") }
}
