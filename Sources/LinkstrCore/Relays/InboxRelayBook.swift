public import NostrProtocol

/// The account's NIP-17 inbox relays: its kind 10050 list, where senders publish the account's
/// gift wraps. Mirrored from relays as NIP-01 keeps a replaceable event (newer wins, of two with
/// one timestamp the lower id, as relays keep it), the watermark persisted so a restart cannot
/// roll back; changed only by publishing a new list and applying what was signed.
public struct InboxRelayBook: Sendable, Equatable, Codable {
    /// NIP-17 asks for one to three; a few more are allowed, far fewer than a reader keeps
    /// (`InboxRelayList.maxRelays`), so every list this client writes is read whole.
    public static let maxRelays = 10

    /// Normal-form URLs (`RelayURL`), in the list's order.
    public private(set) var relays: [String] = []
    /// The applied list's time and id.
    public private(set) var watermarkAt: Int64?
    public private(set) var watermarkID: String?

    public init() {}

    public enum InboxError: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidURL(String)
        case duplicate
        case unknown
        case full

        public var description: String {
            switch self {
            case .invalidURL(let reason): "the relay URL \(reason)"
            case .duplicate: "already an inbox relay"
            case .unknown: "not an inbox relay"
            case .full: "at most \(InboxRelayBook.maxRelays) inbox relays"
            }
        }
    }

    /// Applies `event` (our own kind 10050, signature checked by the caller) when it is newer than
    /// the watermark. False when it is not.
    @discardableResult
    public mutating func apply(list event: NostrEvent) -> Bool {
        guard let list = InboxRelayList(event) else { return false }
        if let at = watermarkAt, let id = watermarkID,
            !InboxRelayList.replaces(createdAt: event.createdAt, id: event.id.hex, over: at, id)
        {
            return false
        }
        relays = list.relays.map(\.description)
        watermarkAt = event.createdAt
        watermarkID = event.id.hex
        return true
    }

    /// The list after adding `input`, for publishing; the book changes when the signed list is applied.
    public func adding(_ input: String) throws(InboxError) -> [RelayURL] {
        let url = try Self.parse(input)
        guard !relays.contains(url.description) else { throw .duplicate }
        guard relays.count < Self.maxRelays else { throw .full }
        return current + [url]
    }

    public func removing(_ input: String) throws(InboxError) -> [RelayURL] {
        let url = try Self.parse(input)
        guard relays.contains(url.description) else { throw .unknown }
        return current.filter { $0 != url }
    }

    /// The next list's `created_at`: now, but always after the watermark so our own update wins
    /// over what we mirrored.
    public func nextCreatedAt(now: Int64 = UnixTime.now()) -> Int64 { max(now, (watermarkAt ?? 0) + 1) }

    private var current: [RelayURL] { relays.compactMap { try? RelayURL($0) } }

    private static func parse(_ input: String) throws(InboxError) -> RelayURL {
        do { return try RelayURL(input) } catch { throw .invalidURL(error.description) }
    }
}
