/// A public key as its 32 bytes held inline: an array of 100,000 of them is one allocation of
/// 3.2 MB, where their 64-character hex strings hold a heap object each as well. For the
/// watcher's bookkeeping of large pubkey sets; it checks nothing but the hex.
package struct PubkeyBytes: Hashable, Comparable, Sendable {
    /// The key's bytes as four big-endian words: comparing them in order compares the bytes.
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// Reads 64 lowercase hex digits, the form pubkeys are stored in; nil for anything else.
    package init?(hex: String) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count = 0
        for byte in hex.utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            switch count / 16 {
            case 0: words.0 = words.0 << 4 | digit
            case 1: words.1 = words.1 << 4 | digit
            case 2: words.2 = words.2 << 4 | digit
            case 3: words.3 = words.3 << 4 | digit
            default: return nil
            }
            count += 1
        }
        guard count == 64 else { return nil }
        self.words = words
    }

    package static func == (lhs: PubkeyBytes, rhs: PubkeyBytes) -> Bool {
        lhs.words == rhs.words
    }

    package static func < (lhs: PubkeyBytes, rhs: PubkeyBytes) -> Bool {
        lhs.words < rhs.words
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}
