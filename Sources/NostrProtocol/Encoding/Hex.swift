/// Hexadecimal encoding as Nostr uses it: lowercase on output, lowercase-only on protocol input.
public enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
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
        var failed = false
        let result = [UInt8](unsafeUninitializedCapacity: utf8.count / 2) { buffer, initialized in
            var index = 0
            while index < utf8.count {
                guard let high = nibble(utf8[index], allowUppercase), let low = nibble(utf8[index + 1], allowUppercase) else {
                    failed = true
                    break
                }
                buffer[index / 2] = high << 4 | low
                index += 2
            }
            initialized = failed ? 0 : utf8.count / 2
        }
        return failed ? nil : result
    }

    @inline(__always)
    private static func nibble(_ c: UInt8, _ allowUppercase: Bool) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F") where allowUppercase: return c &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }
}
