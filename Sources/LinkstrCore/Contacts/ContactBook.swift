import Foundation
public import NostrProtocol

/// The account's contacts: the kind-3 follow list mirrored from relays (R13: newer wins, ties by
/// the order rule's greater event id, the watermark persisted so a restart cannot roll back), and
/// private aliases that are never published.
public struct ContactBook: Sendable, Equatable, Codable {
    /// Followed pubkeys (hex), in the list's order.
    public private(set) var follows: [String] = []
    public private(set) var aliases: [String: String] = [:]
    /// The applied follow list's time and id.
    public private(set) var watermarkAt: Int64?
    public private(set) var watermarkID: String?

    public init() {}

    public enum ContactError: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidKey
        case duplicate
        case unknown
        case isSelf

        public var description: String {
            switch self {
            case .invalidKey: "not a valid npub or hex public key"
            case .duplicate: "already a contact"
            case .unknown: "not a contact"
            case .isSelf: "you cannot add yourself"
            }
        }
    }

    /// R13: applies `event` (our own kind 3, signature checked by the caller) when it is newer
    /// than the watermark. False when it is not.
    @discardableResult
    public mutating func apply(followList event: NostrEvent) -> Bool {
        let order = EventOrder(createdAt: event.createdAt, eventID: event.id.hex)
        if let at = watermarkAt, let id = watermarkID, EventOrder(createdAt: at, eventID: id) >= order { return false }
        follows = FollowList.entries(event).map(\.pubkey.hex)
        watermarkAt = order.createdAt
        watermarkID = order.eventID
        return true
    }

    /// The follow list after adding `input` (npub or hex), for publishing; the book itself changes
    /// when the signed list is applied.
    public func adding(_ input: String, me: String) throws(ContactError) -> [String] {
        guard let key = try? PublicKey(parsing: input.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw .invalidKey }
        guard key.hex != me else { throw .isSelf }
        guard !follows.contains(key.hex) else { throw .duplicate }
        return follows + [key.hex]
    }

    public func removing(_ input: String) throws(ContactError) -> [String] {
        guard let key = try? PublicKey(parsing: input.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw .invalidKey }
        guard follows.contains(key.hex) else { throw .unknown }
        return follows.filter { $0 != key.hex }
    }

    /// Sets (or with nil/blank clears) the private alias of `pubkey`.
    public mutating func setAlias(_ alias: String?, for pubkey: String) {
        let trimmed = alias?.trimmingCharacters(in: .whitespacesAndNewlines)
        aliases[pubkey] = (trimmed?.isEmpty ?? true) ? nil : trimmed
    }

    /// Alias → profile name → npub.
    public func displayName(for pubkey: String, profileName: String? = nil) -> String {
        if let alias = aliases[pubkey] { return alias }
        if let profileName, !profileName.isEmpty { return profileName }
        return (try? PublicKey(hex: pubkey).npub) ?? pubkey
    }

    /// The next follow list's `created_at`: now, but always after the watermark so our own
    /// update wins over what we mirrored.
    public func nextCreatedAt(now: Int64 = UnixTime.now()) -> Int64 { max(now, (watermarkAt ?? 0) + 1) }
}
