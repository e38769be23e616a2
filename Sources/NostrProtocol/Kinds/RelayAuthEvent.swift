/// NIP-42 authentication events (kind 22242), sent in `["AUTH", event]`, never broadcast.
public enum RelayAuthEvent {
    /// How far a relay accepts an AUTH event's `created_at` from its own clock (NIP-42 suggests
    /// about ten minutes).
    public static let maxSkewSeconds: Int64 = 600

    public static func make(keys: Keys, relayURL: String, challenge: String, createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        keys.sign(kind: EventKind.relayAuth, tags: [["relay", relayURL], ["challenge", challenge]], content: "", createdAt: createdAt)
    }

    /// Why a relay at `relayURL` that sent `challenge` refuses `event` as the client's AUTH; nil
    /// when it proves `event.pubkey`. The `relay` tag is compared in NIP-01 normal form, so
    /// `wss://Host:443/relay/` answers for `wss://host/relay`.
    public static func refusal(of event: NostrEvent, challenge: String, relayURL: RelayURL, now: Int64 = UnixTime.now()) -> String? {
        guard event.kind == EventKind.relayAuth else { return "not a kind 22242 event" }
        guard abs(event.createdAt - now) <= maxSkewSeconds else { return "created_at too far from now" }
        guard let tagged = event.tags.first(where: { $0.first == "challenge" && $0.count > 1 }), tagged[1] == challenge else {
            return "wrong challenge"
        }
        guard let relayTag = event.tags.first(where: { $0.first == "relay" && $0.count > 1 }),
            let named = try? RelayURL(relayTag[1]), named == relayURL
        else { return "wrong relay" }
        do { try event.verify() } catch { return "bad id or signature" }
        return nil
    }
}
