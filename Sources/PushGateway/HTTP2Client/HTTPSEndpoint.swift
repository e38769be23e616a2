/// A push service's host as `HTTP2ConnectionPool` connects to it.
package struct HTTPSEndpoint: Hashable, Sendable {
    var host: String
    var port: Int

    /// `https://host[:port]`.
    package init?(url: String) {
        guard url.lowercased().hasPrefix("https://") else { return nil }
        let rest = url.dropFirst(8).prefix { $0 != "/" }
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]"), let port = Int(rest[rest.index(after: colon)...]) {
            host = String(rest[..<colon])
            self.port = port
        } else {
            host = String(rest)
            port = 443
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
    }

    /// An `https://` URL's endpoint and its path (`/` when it has none), as a request is sent to it.
    package static func split(url: String) -> (endpoint: HTTPSEndpoint, path: String)? {
        guard let endpoint = HTTPSEndpoint(url: url) else { return nil }
        let rest = url.dropFirst(8).drop { $0 != "/" }
        return (endpoint, rest.isEmpty ? "/" : String(rest))
    }

    /// `:authority`: the host, with the port when it is not 443.
    var authority: String { port == 443 ? host : "\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    /// SNI is for names only, never address literals.
    var serverName: String? { host.allSatisfy { $0.isNumber || $0 == "." } || host.contains(":") ? nil : host }
}
