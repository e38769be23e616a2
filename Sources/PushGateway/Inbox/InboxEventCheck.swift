package import NostrProtocol

/// What the inbox relay does with an EVENT, judged from the event alone (whether its recipient is
/// registered is the database's to say). Every refusal is an `OK false` message with its NIP-01
/// prefix.
package enum InboxEventCheck: Sendable, Equatable {
    /// A gift wrap to `recipient`, to be stored if someone is registered there.
    case wrap(recipient: String)
    /// A request to vanish (NIP-62) by `pubkey`, addressed to this relay or to all relays, for
    /// what was stored up to `until` (its `created_at`: a request replayed later deletes nothing new).
    case vanish(pubkey: String, until: Int64)
    case refuse(String)

    package static func judge(_ event: NostrEvent, size: Int, relayURL: RelayURL, now: Int64 = UnixTime.now()) -> InboxEventCheck {
        guard size <= InboxRelaySettings.maxEventBytes else {
            return .refuse("invalid: events are at most \(InboxRelaySettings.maxEventBytes / 1024) KiB here")
        }
        if event.kind == EventKind.requestToVanish { return judgeVanish(event, relayURL: relayURL) }
        guard event.kind == EventKind.giftWrap else { return .refuse("restricted: this inbox accepts only gift wraps (kind 1059)") }
        // Only the key's form is checked here, not that it is a curve point (a square root per
        // wrap): a recipient is stored for only when a device is registered under the key, and
        // registering proved the key by signing with it.
        guard let recipient = GiftWrap.soleRecipient(of: event), Hex.decode(recipient, count: 32) != nil else {
            return .refuse("invalid: a gift wrap names exactly one recipient, in one p tag")
        }
        guard event.createdAt >= now - InboxRelaySettings.maxAgeSeconds else {
            return .refuse("invalid: created_at is more than 3 days in the past")
        }
        guard event.createdAt <= now + InboxRelaySettings.maxFutureSeconds else {
            return .refuse("invalid: created_at is more than 15 minutes in the future")
        }
        do { try event.verify() } catch { return .refuse("invalid: bad event id or signature") }
        return .wrap(recipient: recipient)
    }

    /// NIP-62: signed by the pubkey that vanishes, with a `relay` tag naming this relay (in NIP-01
    /// normal form) or `ALL_RELAYS`.
    private static func judgeVanish(_ event: NostrEvent, relayURL: RelayURL) -> InboxEventCheck {
        let named = event.tags.filter { $0.first == "relay" && $0.count > 1 }.map { $0[1] }
        let addressed = named.contains("ALL_RELAYS") || named.contains { (try? RelayURL($0)) == relayURL }
        guard addressed else { return .refuse("invalid: a request to vanish must name this relay or ALL_RELAYS") }
        do { try event.verify() } catch { return .refuse("invalid: bad event id or signature") }
        return .vanish(pubkey: event.pubkey.hex, until: event.createdAt)
    }
}
