public import NostrProtocol

/// linkstr's rumors: unsigned kind-44001 events whose content is a `LinkstrPayload`
/// (docs/linkstr-wire.md §1), and the gift wraps that carry them.
public enum LinkstrRumor {
    public static let kind: UInt16 = 44001

    /// The rumor for `payload` from `sender`: `reaction` and `root_delete` carry exactly
    /// `["e", root_id, "", "root"]`, the other kinds no tag.
    public static func make(_ payload: LinkstrPayload, sender: PublicKey, createdAt: Int64 = UnixTime.now()) -> UnsignedEvent {
        let tags: [[String]] = payload.kind.referencesRoot ? [["e", payload.rootID, "", "root"]] : []
        return UnsignedEvent(pubkey: sender, createdAt: createdAt, kind: kind, tags: tags, content: payload.json)
    }

    /// One gift wrap per recipient, plus one to the sender when it is not a recipient (its own
    /// copy, so its other devices and a restore see what it sent).
    public static func wraps(
        _ payload: LinkstrPayload, from sender: Keys, to recipients: [PublicKey],
        createdAt: Int64 = UnixTime.now()
    ) throws(GiftWrapError) -> (rumor: UnsignedEvent, wraps: [NostrEvent]) {
        let rumor = make(payload, sender: sender.publicKey, createdAt: createdAt)
        var targets = Fanout.deduplicated(recipients)
        if !targets.contains(sender.publicKey) { targets.append(sender.publicKey) }
        var wraps: [NostrEvent] = []
        wraps.reserveCapacity(targets.count)
        for recipient in targets { wraps.append(try GiftWrap.make(rumor, author: sender, recipient: recipient)) }
        return (rumor, wraps)
    }
}
