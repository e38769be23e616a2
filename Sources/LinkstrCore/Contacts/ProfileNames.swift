import LinkstrWire
public import NostrProtocol

/// Names from other users' kind-0 metadata (NIP-01/NIP-24): `display_name`, else `name`. The
/// newest signed event per author wins; the book is persisted with the account so names survive
/// a restart. Only names are kept.
public struct ProfileNames: Sendable, Equatable, Codable {
    public struct Entry: Sendable, Equatable, Codable {
        public var name: String
        public var createdAt: Int64
    }

    public private(set) var entries: [String: Entry] = [:]

    public init() {}

    public func name(for pubkey: String) -> String? { entries[pubkey]?.name }

    /// Applies a kind-0 event (its signature checked here). False when it is not newer, not valid
    /// or carries no usable name.
    @discardableResult
    public mutating func apply(_ event: NostrEvent) -> Bool {
        guard event.kind == EventKind.metadata, event.isValid else { return false }
        let author = event.pubkey.hex
        if let current = entries[author], current.createdAt >= event.createdAt { return false }
        guard let object = (try? JSONValue(parsing: event.content))?.objectValue else { return false }
        let candidates = [object["display_name"]?.stringValue, object["displayName"]?.stringValue, object["name"]?.stringValue]
        guard let name = candidates.compactMap({ $0?.trimmingWhitespaceAndNewlines() }).first(where: { !$0.isEmpty }) else { return false }
        // A name is a label, not a document: keep it to one short line.
        let label = String(name.prefix(64).map { $0.isNewline ? " " : $0 })
        entries[author] = Entry(name: label, createdAt: event.createdAt)
        return true
    }
}
