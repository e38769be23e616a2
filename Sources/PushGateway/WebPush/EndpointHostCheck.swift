import Foundation
import GatewayWire
import NostrProtocol
import NostrRelay
import Synchronization

/// Whether the gateway may POST to a push endpoint's host: judged first from the URL (an IP
/// literal, a local name), then by every address the name resolves to. Endpoints come from
/// clients, so without it a registration could aim the gateway's requests at its own network.
///
/// The registration route asks before it stores an endpoint (`refusal(for:)`), and the Web Push
/// sender asks again before every send (`destination(for:)`), because a name can resolve
/// differently later; the sender then connects to the address that was judged, never to a second
/// lookup's. Verdicts are kept a minute, for at most `cacheLimit` names.
final class EndpointHostCheck: Sendable {
    /// Why a host is not contacted now.
    enum Refusal: Equatable {
        /// It names, or resolves to, an address the policy refuses ("names a local host").
        case notPublic(String)
        /// Its name resolves to no address at all.
        case noAddress
        /// The lookup failed or took longer than `lookupLimit`: nothing is known about it.
        case lookupFailed
    }

    /// Whether a send may go, and the addresses it may connect to: a name's, as its lookup judged
    /// them; an IP literal's, itself.
    enum Destination: Equatable {
        case refused(Refusal)
        case allowed(addresses: [IPAddress])
    }

    typealias Resolver = @Sendable (_ name: String) async throws -> [IPAddress]

    let policy: RelayAddressPolicy
    let now: @Sendable () -> Date
    let resolver: Resolver
    private let verdicts = Mutex<[String: (destination: Destination, checkedAt: Date)]>([:])
    static let verdictLifetime: TimeInterval = 60
    static let lookupLimit: Duration = .seconds(5)
    static let cacheLimit = 10_000
    /// Addresses a verdict keeps for the connection to choose from.
    static let keptAddresses = 8

    /// The system's resolver, bounded by `lookupLimit`.
    static let systemResolver: Resolver = { try await HostResolver.addresses(of: $0, timeout: lookupLimit) }

    init(allowsPrivate: Bool, now: @escaping @Sendable () -> Date = Date.init, resolver: @escaping Resolver = systemResolver) {
        self.policy = RelayAddressPolicy(allowsPrivate: allowsPrivate)
        self.now = now
        self.resolver = resolver
    }

    /// Why `host` may not be contacted now, or nil. Never looks a name up when private
    /// addresses are allowed: there is nothing to refuse.
    func refusal(for host: URLHost) async -> Refusal? {
        if let refusal = policy.refusal(for: host) { return .notPublic(refusal) }
        guard !policy.allowsPrivate else { return nil }
        if case .refused(let refusal) = await destination(for: host) { return refusal }
        return nil
    }

    /// Whether `host` may be contacted now and, for a name, at which addresses: one lookup's
    /// answers, all of them judged. Names are looked up even when private addresses are allowed,
    /// so that the connection still goes where the judged lookup led.
    func destination(for host: URLHost) async -> Destination {
        if let refusal = policy.refusal(for: host) { return .refused(.notPublic(refusal)) }
        let name: String
        switch host {
        case .address(let address): return .allowed(addresses: [address])
        case .name(let named): name = named
        }
        let date = now()
        if let known = verdicts.withLock({ $0[name] }), date.timeIntervalSince(known.checkedAt) < Self.verdictLifetime {
            return known.destination
        }
        let verdict: Destination
        do {
            let addresses = try await resolver(name)
            if addresses.isEmpty {
                verdict = .refused(.noAddress)
            } else {
                // Every address is judged; a few are kept, so a name answered with thousands of
                // records costs no more memory than any other.
                verdict =
                    policy.refusal(resolved: addresses).map { .refused(.notPublic($0)) }
                    ?? .allowed(addresses: Array(addresses.prefix(Self.keptAddresses)))
            }
        } catch {
            verdict = .refused(.lookupFailed)
        }
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.cacheLimit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[name] = (verdict, date)
        }
        return verdict
    }
}
