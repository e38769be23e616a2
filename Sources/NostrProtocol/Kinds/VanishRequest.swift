/// NIP-62 requests to vanish (kind 62).
public enum VanishRequest {
    public static let allRelays = "ALL_RELAYS"

    /// A request addressed to `relays`, or to every relay when `relays` is nil.
    public static func make(keys: Keys, relays: [String]?, reason: String = "", createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        let targets = relays ?? [allRelays]
        precondition(!targets.isEmpty, "a vanish request names at least one relay")
        return keys.sign(kind: EventKind.requestToVanish, tags: targets.map { ["relay", $0] }, content: reason, createdAt: createdAt)
    }
}
