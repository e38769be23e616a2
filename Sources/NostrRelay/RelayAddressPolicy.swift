public import NostrProtocol

/// Which relays a server may connect to when the URLs come from its users: by default only ones
/// on the public internet, so that a registration cannot point the server at its own network
/// (its database, a cloud metadata address, an admin port on loopback).
public struct RelayAddressPolicy: Sendable, Equatable {
    /// Loopback, private and other non-public addresses are allowed too (tests, private
    /// deployments).
    public var allowsPrivate: Bool

    public init(allowsPrivate: Bool) {
        self.allowsPrivate = allowsPrivate
    }

    /// Names that resolve to the local host or network by convention or by standard (RFC 6761,
    /// RFC 6762, RFC 8375), whatever a resolver says.
    static let localSuffixes = ["localhost", "local", "internal", "home.arpa", "localdomain"]

    /// Why `url` is refused, judged from the URL alone (an IP literal or a local name); nil when it
    /// may be tried. A name can still resolve to a non-public address (`127.0.0.1.nip.io`): whatever
    /// connects to a user's relay must judge the addresses it resolved with `refusal(resolved:)`,
    /// and connect to those very addresses, or a second lookup could answer differently
    /// (`RelayConnection` does).
    public func refusal(for url: RelayURL) -> String? {
        refusal(for: url.host)
    }

    /// The same judgement for any URL's host (a Web Push endpoint's).
    public func refusal(for host: URLHost) -> String? {
        guard !allowsPrivate else { return nil }
        switch host {
        case .address(let address):
            return address.isPublic ? nil : "names a non-public address"
        case .name(let name):
            let isLocal = Self.localSuffixes.contains { name == $0 || name.hasSuffix("." + $0) } || !name.contains(".")
            return isLocal ? "names a local host" : nil
        }
    }

    /// Why a host that resolved to `addresses` is refused: any non-public address among them
    /// (a name with one public and one private address would otherwise reach the private one on
    /// some connection attempts).
    public func refusal(resolved addresses: [IPAddress]) -> String? {
        guard !allowsPrivate else { return nil }
        guard !addresses.isEmpty else { return "resolves to no address" }
        return addresses.allSatisfy(\.isPublic) ? nil : "resolves to a non-public address"
    }
}
