import Foundation
import GatewayWire
import NostrProtocol
import NostrRelay
import Synchronization

/// Whether the gateway may POST to a push endpoint's host: judged first from the URL (an IP
/// literal, a local name), then by every address the name resolves to. Endpoints come from
/// clients, so without it a registration could aim the gateway's requests at its own network.
///
/// The registration route asks before it stores an endpoint, and the Web Push sender asks again
/// before every send, because a name can resolve differently later. Verdicts are kept a minute,
/// for at most `cacheLimit` names.
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

    let policy: RelayAddressPolicy
    let now: @Sendable () -> Date
    private let verdicts = Mutex<[String: (refusal: Refusal?, checkedAt: Date)]>([:])
    static let verdictLifetime: TimeInterval = 60
    static let lookupLimit: Duration = .seconds(5)
    static let cacheLimit = 10_000

    init(allowsPrivate: Bool, now: @escaping @Sendable () -> Date = Date.init) {
        self.policy = RelayAddressPolicy(allowsPrivate: allowsPrivate)
        self.now = now
    }

    /// Why `host` may not be contacted now, or nil. Never looks a name up when private
    /// addresses are allowed: there is nothing to refuse.
    func refusal(for host: URLHost) async -> Refusal? {
        if let refusal = policy.refusal(for: host) { return .notPublic(refusal) }
        guard case .name(let name) = host, !policy.allowsPrivate else { return nil }
        let date = now()
        if let known = verdicts.withLock({ $0[name] }), date.timeIntervalSince(known.checkedAt) < Self.verdictLifetime {
            return known.refusal
        }
        let verdict: Refusal?
        do {
            let addresses = try await HostResolver.addresses(of: name, timeout: Self.lookupLimit)
            verdict = addresses.isEmpty ? .noAddress : policy.refusal(resolved: addresses).map(Refusal.notPublic)
        } catch {
            verdict = .lookupFailed
        }
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.cacheLimit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[name] = (verdict, date)
        }
        return verdict
    }
}
