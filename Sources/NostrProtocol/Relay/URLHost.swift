/// The host and port of a URL that someone else wrote and the server will connect to (a relay, a
/// Web Push endpoint), parsed strictly: an ASCII host name or a dotted IPv4 address, and a port
/// in range. IPv6 literals (`[…]`) are refused: the clients that connect read a URL's host up to
/// its first colon.
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
    public enum AuthorityError: Error, Sendable, Equatable {
        case badHost
        case ipv6Host
        case badPort
    }

    /// `host[:port]` without user info; the port is nil when absent or equal to `defaultPort`.
    public static func parseAuthority(_ authority: Substring, defaultPort: Int) throws(AuthorityError) -> (host: URLHost, port: Int?) {
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
    /// URL's path and query may hold as written.
    public static let pathCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?%")
}
