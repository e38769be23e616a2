/// RFC 4648 base64 (standard alphabet). Written here rather than taken from Foundation because
/// NIP-44 needs a strict canonical decoder (padding required, unused bits zero) and NIP-98 headers
/// need a lenient one (padding optional), and both sit on hot paths.
public enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    /// Padded standard base64.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        let outputCount = (input.count + 2) / 3 * 4
        let out = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            var i = 0
            var o = 0
            while i + 3 <= input.count {
                let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                buffer[o] = alphabet[Int(v >> 18 & 63)]
                buffer[o + 1] = alphabet[Int(v >> 12 & 63)]
                buffer[o + 2] = alphabet[Int(v >> 6 & 63)]
                buffer[o + 3] = alphabet[Int(v & 63)]
                i += 3
                o += 4
            }
            let rest = input.count - i
            if rest > 0 {
                let v = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                buffer[o] = alphabet[Int(v >> 18 & 63)]
                buffer[o + 1] = alphabet[Int(v >> 12 & 63)]
                buffer[o + 2] = rest == 2 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "=")
                buffer[o + 3] = UInt8(ascii: "=")
                o += 4
            }
            initialized = o
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64. With `requirePadding` the input length must be a multiple of 4 with `=`
    /// padding; without it, missing padding is accepted (NIP-98 headers seen in the wild).
    /// Always rejects characters outside the alphabet, misplaced `=`, and non-zero unused bits,
    /// so that every byte string has exactly one accepted encoding.
    public static func decode(_ text: some StringProtocol, requirePadding: Bool = true) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        return utf8.withUnsafeMutableBufferPointer { decode(UnsafeBufferPointer($0), requirePadding: requirePadding) }
    }

    static func decode(_ input: UnsafeBufferPointer<UInt8>, requirePadding: Bool) -> [UInt8]? {
        var length = input.count
        var padding = 0
        while length > 0, input[length - 1] == UInt8(ascii: "="), padding < 2 {
            length -= 1
            padding += 1
        }
        if requirePadding {
            guard input.count % 4 == 0 else { return nil }
        } else if padding > 0 {
            guard input.count % 4 == 0 else { return nil }
        }
        let remainder = length % 4
        guard remainder != 1 else { return nil }
        if padding > 0 { guard (remainder == 2 && padding == 2) || (remainder == 3 && padding == 1) else { return nil } }
        let outputCount = length / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            initialized = 0
            var i = 0
            var o = 0
            while i + 4 <= length {
                let a = reverse[Int(input[i])], b = reverse[Int(input[i + 1])]
                let c = reverse[Int(input[i + 2])], d = reverse[Int(input[i + 3])]
                if (a | b | c | d) & 0xC0 != 0 {
                    failed = true
                    return
                }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                buffer[o] = UInt8(truncatingIfNeeded: v >> 16)
                buffer[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                buffer[o + 2] = UInt8(truncatingIfNeeded: v)
                i += 4
                o += 3
            }
            if remainder >= 2 {
                let a = reverse[Int(input[i])], b = reverse[Int(input[i + 1])]
                let c = remainder == 3 ? reverse[Int(input[i + 2])] : 0
                if (a | b | c) & 0xC0 != 0 {
                    failed = true
                    return
                }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                // Unused low bits must be zero for a canonical encoding.
                if remainder == 2, v & 0xFFFF != 0 {
                    failed = true
                    return
                }
                if remainder == 3, v & 0xFF != 0 {
                    failed = true
                    return
                }
                buffer[o] = UInt8(truncatingIfNeeded: v >> 16)
                if remainder == 3 { buffer[o + 1] = UInt8(truncatingIfNeeded: v >> 8) }
            }
            initialized = outputCount
        }
        return failed ? nil : out
    }
}
