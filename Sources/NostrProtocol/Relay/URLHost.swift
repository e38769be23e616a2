/// The host and port of a URL that someone else wrote and the server will connect to (a relay, a
/// Web Push endpoint), parsed strictly: an ASCII host name or a dotted IPv4 address, and a port
/// in range. IPv6 literals (`[…]`) are refused: services are reached by name, and one literal
/// spelling (dotted IPv4) keeps the address checks to one form an attacker cannot vary.
public enum URLHost: Sendable, Hashable, CustomStringConvertible {
    /// A DNS name, lowercased (internationalised names in their `xn--` form).
    case name(String)
    case address(IPAddress)

    public var description: String {
        switch self {
        case .name(let name): name
        case .address(let address): address.description
        }
    }

    /// Why an authority was refused.
    enum AuthorityError: Error, Sendable, Equatable {
        case badHost
        case ipv6Host
        case badPort
    }

    /// A URL's parts as `split` checked them.
    public struct Parts: Sendable {
        /// Lowercased.
        public let scheme: String
        public let host: URLHost
        /// Nil when absent or the scheme's default.
        public let port: Int?
        /// As written: empty, or from `/` or `?`.
        public let pathAndQuery: String
    }

    /// Why `split` refused a URL, in the order it checks.
    public enum SplitError: Error, Sendable, Equatable {
        case notASCII
        case badScheme
        case fragment
        case userInfo
        case badHost
        case ipv6Host
        case badPort
        case badPath
    }

    /// `scheme://host[:port][/path][?query]`, checked the one way every URL someone else wrote is
    /// (a relay's, a push endpoint's): ASCII without spaces or control characters, a scheme that
    /// `defaultPort` knows (it gives that scheme's port, nil for a scheme refused), no fragment, no
    /// user info, the authority by `parseAuthority`, and a path of URL characters.
    public static func split(_ text: String, defaultPort: (String) -> Int?) throws(SplitError) -> Parts {
        // Visible ASCII only (no control character, space or other whitespace), checked by the
        // octet: endpoints run to hundreds of characters, and each is read on every push.
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { throw .notASCII }
        guard let separator = text.firstRange(of: "://") else { throw .badScheme }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let schemePort = defaultPort(scheme) else { throw .badScheme }
        let rest = text[separator.upperBound...]
        guard !rest.contains("#") else { throw .fragment }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else { throw .userInfo }
        let host: URLHost, port: Int?
        do {
            (host, port) = try parseAuthority(authority, defaultPort: schemePort)
        } catch {
            switch error {
            case .badHost: throw .badHost
            case .ipv6Host: throw .ipv6Host
            case .badPort: throw .badPort
            }
        }
        let pathAndQuery = rest[authorityEnd...]
        guard pathAndQuery.utf8.allSatisfy({ pathOctets[Int($0)] }) else { throw .badPath }
        return Parts(scheme: scheme, host: host, port: port, pathAndQuery: String(pathAndQuery))
    }

    /// `host[:port]` without user info; the port is nil when absent or equal to `defaultPort`.
    static func parseAuthority(_ authority: Substring, defaultPort: Int) throws(AuthorityError) -> (host: URLHost, port: Int?) {
        var hostText = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            throw .ipv6Host
        } else if let colon = authority.lastIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        var port: Int?
        if let portText {
            guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(portText),
                (1...65_535).contains(value)
            else { throw .badPort }
            port = value == defaultPort ? nil : value
        }
        if let address = IPAddress(hostText), case .v4 = address { return (.address(address), port) }
        return (.name(try hostName(hostText)), port)
    }

    /// A DNS name: labels of letters, digits and hyphens, none starting or ending with a hyphen,
    /// at most 63 bytes each and 253 in all; one trailing dot dropped. The last label starts with
    /// a letter, as every top-level domain does: `127.1`, `0x7f.0.0.1` or `2130706433` are no
    /// IPv4 addresses we accept, yet resolvers read them as such.
    private static func hostName(_ text: Substring) throws(AuthorityError) -> String {
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { throw .badHost }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.count), label.first != "-", label.last != "-",
                label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
            else { throw .badHost }
        }
        guard labels.last?.first?.isLetter == true else { throw .badHost }
        return name
    }

    /// RFC 3986 unreserved, sub-delims, ":", "@", "/", "?", and "%" of percent-encoding: what a
    /// URL's path and query may hold as written; a table by octet value, read only for visible
    /// ASCII (checked first).
    static let pathOctets: [Bool] = {
        var table = [Bool](repeating: false, count: 128)
        for octet in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?%".utf8 { table[Int(octet)] = true }
        return table
    }()
}
