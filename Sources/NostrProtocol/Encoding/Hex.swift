/// Hexadecimal encoding as Nostr uses it: lowercase on output, lowercase-only on protocol input.
public enum Hex {
    /// Lowercase hex of `bytes`, written straight into the string's storage (ids and keys are
    /// turned into hex for every event a relay watcher or an inbox relay handles).
    public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        if let text = bytes.withContiguousStorageIfAvailable(encode(contiguous:)) { return text }
        // A digest, say: its bytes are not in one buffer this side of its iterator.
        return Array(bytes).withUnsafeBufferPointer(encode(contiguous:))
    }

    private static func encode(contiguous bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digit(byte >> 4)
                buffer[2 * index + 1] = digit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    /// The lowercase 8-4-4-4-12 form of a UUID's 16 bytes (RFC 9562 §4), as an `apns-id` or an
    /// FCM message id carries it, written straight into the string's storage: Foundation's
    /// `uuidString` formats each byte through `sprintf` and is uppercase, and lowercasing it makes a
    /// second string (about 5,000 instructions of every push, `scripts/bench-send-instructions.sh`).
    /// Bytes of another count are written the same way, a dash before bytes 4, 6, 8 and 10.
    package static func uuidForm(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2 + 4) { text in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                text[position] = digit(byte >> 4)
                text[position + 1] = digit(byte & 0x0F)
                position += 2
            }
            return position
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ UInt8(ascii: "0") : nibble &+ (UInt8(ascii: "a") &- 10)
    }

    /// Decodes hex text. Nostr fields are lowercase, so uppercase is refused unless `allowUppercase`
    /// (user input such as an imported key) is set. Returns nil on odd length or a non-hex character.
    public static func decode(_ text: some StringProtocol, allowUppercase: Bool = false) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        return utf8.withUnsafeMutableBufferPointer { decode(UnsafeBufferPointer($0), allowUppercase: allowUppercase) }
    }

    /// Decodes hex text that must encode exactly `count` bytes.
    public static func decode(_ text: some StringProtocol, count: Int, allowUppercase: Bool = false) -> [UInt8]? {
        guard text.utf8.count == count * 2 else { return nil }
        return decode(text, allowUppercase: allowUppercase)
    }

    static func decode(_ utf8: UnsafeBufferPointer<UInt8>, allowUppercase: Bool) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        // Every character is decoded and judged without a branch (hex digits and letters come in
        // no predictable order); one check at the end says whether all were hex.
        var valid: UInt8 = 1
        let result = [UInt8](unsafeUninitializedCapacity: utf8.count / 2) { buffer, initialized in
            var index = 0
            while index < utf8.count {
                let (high, highValid) = nibble(utf8[index], allowUppercase)
                let (low, lowValid) = nibble(utf8[index + 1], allowUppercase)
                valid &= highValid & lowValid
                buffer[index / 2] = high << 4 | low
                index += 2
            }
            initialized = utf8.count / 2
        }
        return valid == 1 ? result : nil
    }

    /// A character's value, and 1 when it is a hex digit (lowercase only unless `allowUppercase`),
    /// 0 when not (its value is then meaningless).
    @inline(__always)
    private static func nibble(_ c: UInt8, _ allowUppercase: Bool) -> (value: UInt8, valid: UInt8) {
        let digit = c &- UInt8(ascii: "0")
        let letter = (allowUppercase ? c | 0x20 : c) &- UInt8(ascii: "a")
        let isDigit: UInt8 = digit < 10 ? 1 : 0
        let isLetter: UInt8 = letter < 6 ? 1 : 0
        return (isDigit == 1 ? digit : letter &+ 10, isDigit | isLetter)
    }
}
