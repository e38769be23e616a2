/// The bytes a JSON string carries as they are: everything but `"`, `\` and the control
/// characters below 0x20. Reading and writing an event both scan its content for the others,
/// and a gift wrap's content is kilobytes of base64 with none of them, so the scan goes eight
/// bytes at a time.
enum JSONPlainBytes {
    /// The index of the first byte at or after `start` that is not plain, or `bytes.count`.
    static func firstNotPlain(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count, !anyNotPlain(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                index += 8
            }
        }
        while index < bytes.count, isPlain(bytes[index]) { index += 1 }
        return index
    }

    @inline(__always)
    static func isPlain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte != 0x22 && byte != 0x5C }

    /// Whether any of the eight bytes in `word` is not plain. Exact, not a hint: the classic test
    /// for a zero byte, `(x − 0x01…) & ~x & 0x80…`, is non-zero exactly when some byte of `x` is
    /// zero (a borrow can only mark bytes above a zero one), and its variant with 0x20 exactly
    /// when some byte is below 0x20.
    @inline(__always)
    static func anyNotPlain(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & highs != 0
    }
}
