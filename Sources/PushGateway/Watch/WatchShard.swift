/// The shard of a pubkey: its first 32 bits modulo the shard count. Pubkeys are uniformly
/// distributed already, so no further hashing is needed. `linkstr_watch_shard` in
/// migrations/0003_relay_watch.sql computes the same in SQL (a test checks they agree).
public enum WatchShard {
    public static func of(pubkey: String, shards: Int) -> Int {
        let prefix = pubkey.utf8.prefix(8)
        var value: UInt32 = 0
        for byte in prefix {
            let digit: UInt32 =
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
                default: 0
                }
            value = value << 4 | digit
        }
        return Int(value % UInt32(shards))
    }
}
