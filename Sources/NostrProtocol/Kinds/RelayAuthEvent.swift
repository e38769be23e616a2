/// NIP-42 authentication events (kind 22242), sent in `["AUTH", event]`, never broadcast.
public enum RelayAuthEvent {
    public static func make(keys: Keys, relayURL: String, challenge: String, createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        keys.sign(kind: EventKind.relayAuth, tags: [["relay", relayURL], ["challenge", challenge]], content: "", createdAt: createdAt)
    }
}
