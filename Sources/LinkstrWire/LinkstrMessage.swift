public import NostrProtocol

/// A received linkstr message: every check of docs/linkstr-wire.md §1 passed (wrap, seal and rumor by
/// NIP-59, kind 44001, a valid payload). The sender is the seal's author; the message time is the
/// rumor's `created_at`.
public struct LinkstrMessage: Sendable, Equatable {
    public var wrapID: EventID
    public var rumorID: EventID
    public var sender: PublicKey
    public var createdAt: Int64
    public var payload: LinkstrPayload

    /// A message as the client core builds it for what it sends itself (no wrap to open).
    package init(wrapID: EventID, rumorID: EventID, sender: PublicKey, createdAt: Int64, payload: LinkstrPayload) {
        self.wrapID = wrapID
        self.rumorID = rumorID
        self.sender = sender
        self.createdAt = createdAt
        self.payload = payload
    }

    public enum OpenError: Error, Sendable, Equatable, CustomStringConvertible {
        case notAGiftWrap(kind: UInt16)
        case giftWrap(GiftWrapError)
        case wrongRumorKind(UInt16)
        case payload(PayloadError)

        public var description: String {
            switch self {
            case .notAGiftWrap(let kind): "kind \(kind) is not a linkstr gift wrap (1059)"
            case .giftWrap(let error): "\(error)"
            case .wrongRumorKind(let kind): "rumor kind \(kind), expected \(LinkstrRumor.kind)"
            case .payload(let error): "payload: \(error)"
            }
        }
    }

    /// Opens `wrap` addressed to `keys`; any failed check drops it with the reason.
    public static func open(_ wrap: NostrEvent, keys: Keys, cache: ConversationKeyCache? = nil, now: Int64 = UnixTime.now())
        throws(OpenError) -> LinkstrMessage
    {
        guard wrap.kind == GiftWrap.wrapKind else { throw .notAGiftWrap(kind: wrap.kind) }
        let gift: UnwrappedGift
        do { gift = try GiftWrap.unwrap(wrap, keys: keys, cache: cache) } catch { throw .giftWrap(error) }
        guard gift.rumor.kind == LinkstrRumor.kind else { throw .wrongRumorKind(gift.rumor.kind) }
        let payload: LinkstrPayload
        do { payload = try LinkstrPayload.decode(gift.rumor.content, now: now) } catch { throw .payload(error) }
        return LinkstrMessage(
            wrapID: wrap.id, rumorID: gift.rumor.id, sender: gift.sender, createdAt: gift.rumor.createdAt, payload: payload)
    }
}
