/// A user's NIP-17 DM inbox relays: the replaceable kind 10050 event, whose `["relay", url]` tags
/// name where senders publish the user's gift wraps.
///
/// Read from events others relay to us, so it is read leniently and bounded: a tag that is not a
/// valid relay URL is skipped (and counted), duplicates after normalisation are one relay, and
/// only the first `maxRelays` are kept (NIP-17 asks for one to three).
public struct InboxRelayList: Sendable, Equatable {
    /// Relays read from one list; more are dropped.
    public static let maxRelays = 20

    public let author: PublicKey
    public let createdAt: Int64
    /// In the order the tags name them, normalised, without duplicates.
    public let relays: [RelayURL]
    /// `relay` tags that were skipped: not a URL, or past `maxRelays`.
    public let skipped: Int

    /// The list `event` carries; nil when it is no kind 10050 event. Its signature is not checked
    /// here: whoever hands it over has verified it.
    public init?(_ event: NostrEvent) {
        guard event.kind == EventKind.inboxRelays else { return nil }
        var relays: [RelayURL] = []
        var skipped = 0
        for tag in event.tags where tag.count >= 2 && tag[0] == "relay" {
            guard relays.count < Self.maxRelays, let url = try? RelayURL(tag[1]) else {
                skipped += 1
                continue
            }
            if !relays.contains(url) { relays.append(url) }
        }
        self.author = event.pubkey
        self.createdAt = event.createdAt
        self.relays = relays
        self.skipped = skipped
    }

    /// The unsigned event that publishes `relays` as `author`'s list.
    public static func event(author: PublicKey, relays: [RelayURL], createdAt: Int64 = UnixTime.now()) -> UnsignedEvent {
        UnsignedEvent(
            pubkey: author, createdAt: createdAt, kind: EventKind.inboxRelays, tags: relays.map { ["relay", $0.description] }, content: "")
    }

    /// Whether `event` replaces `other` (NIP-01 replaceable events: the newer one, and of two
    /// with one timestamp, the lower id).
    public static func newer(_ event: NostrEvent, than other: NostrEvent) -> Bool {
        replaces(createdAt: event.createdAt, id: event.id.hex, over: other.createdAt, other.id.hex)
    }

    /// The same rule for a list known only by its time and id (a stored watermark).
    public static func replaces(createdAt: Int64, id: String, over otherCreatedAt: Int64, _ otherID: String) -> Bool {
        createdAt != otherCreatedAt ? createdAt > otherCreatedAt : id < otherID
    }
}
