/// Event kinds this project uses by name.
public enum EventKind {
    public static let metadata: UInt16 = 0
    public static let followList: UInt16 = 3
    public static let deletion: UInt16 = 5
    public static let seal: UInt16 = 13
    public static let requestToVanish: UInt16 = 62
    public static let giftWrap: UInt16 = 1059
    /// NIP-17: a user's DM inbox relays (replaceable).
    public static let inboxRelays: UInt16 = 10050
    public static let relayAuth: UInt16 = 22242
    public static let httpAuth: UInt16 = 27235
    /// linkstr's application rumor (inside gift wraps).
    public static let linkstrPayload: UInt16 = 44001
}
