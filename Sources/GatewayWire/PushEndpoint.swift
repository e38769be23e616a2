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
        let parts: URLHost.Parts
        do {
            parts = try URLHost.split(text) { $0 == "https" ? 443 : nil }
        } catch {
            throw Self.refused(error)
        }
        (host, port) = (parts.host, parts.port)
        var pathAndQuery = parts.pathAndQuery
        if !pathAndQuery.hasPrefix("/") { pathAndQuery = "/" + pathAndQuery }
        // An HTTP client refuses such a URL on every send, so it could never be delivered to.
        guard Self.escapesAreWellFormed(pathAndQuery) else { throw Self.refused("has a % not followed by two hex digits") }
        self.pathAndQuery = pathAndQuery
        description = "https://" + host.description + (port.map { ":\($0)" } ?? "") + pathAndQuery
        // The normal form can be a byte longer (a `/` before a bare query): it must parse again.
        guard description.utf8.count <= Self.maxLength else { throw Self.refused("is longer than \(Self.maxLength) bytes") }
    }

    /// Whether every `%` in `text` starts a percent-escape: two hex digits (RFC 3986 §2.1).
    static func escapesAreWellFormed(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else { return false }
                index += 3
            } else {
                index += 1
            }
        }
        return true
    }

    /// `scheme://host[:port]`: the audience a VAPID token names (RFC 8292 §2).
    public var origin: String { "https://" + host.description + (port.map { ":\($0)" } ?? "") }

    private static func refused(_ reason: String) -> RequestBodyError { RequestBodyError("endpoint \(reason)") }

    private static func refused(_ error: URLHost.SplitError) -> RequestBodyError {
        switch error {
        case .notASCII: refused("must be ASCII without spaces")
        case .badScheme: refused("must start with https://")
        case .fragment: refused("must not have a fragment (#)")
        case .userInfo: refused("must not carry a user name or password")
        case .badHost: refused("has no valid host name or IP address")
        case .ipv6Host: refused("names an IPv6 address; use a host name")
        case .badPort: refused("has an invalid port")
        case .badPath: refused("has characters a URL path cannot hold")
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
