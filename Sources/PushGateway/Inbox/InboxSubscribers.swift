import Foundation
import NostrProtocol

/// The inbox relay's authenticated connections on this instance, by the recipient each proved,
/// so that a wrap stored by any instance (announced by NOTIFY) reaches the connections that may
/// read it.
final class InboxSubscribers: Sendable {
    /// Hands a stored wrap (recipient, id, `created_at`, JSON) to one connection, which sends it
    /// to the subscriptions it matches.
    typealias Deliver = @Sendable (_ recipient: String, _ id: String, _ createdAt: Int64, _ event: String) -> Void

    private let byRecipient = Locked<[String: [UUID: Deliver]]>([:])

    func add(_ recipient: String, _ token: UUID, _ deliver: @escaping Deliver) {
        byRecipient.withLock { $0[recipient, default: [:]][token] = deliver }
    }

    func remove(_ recipient: String, _ token: UUID) {
        byRecipient.withLock { all in
            all[recipient]?[token] = nil
            if all[recipient]?.isEmpty == true { all[recipient] = nil }
        }
    }

    /// No connection here is authenticated: a stored wrap's announcement has no one to reach.
    var isEmpty: Bool { byRecipient.withLock { $0.isEmpty } }

    /// Every recipient with a connection here.
    func recipients() -> [String] {
        byRecipient.withLock { Array($0.keys) }
    }

    func connections(of recipient: String) -> [Deliver] {
        byRecipient.withLock { $0[recipient].map { Array($0.values) } ?? [] }
    }
}
