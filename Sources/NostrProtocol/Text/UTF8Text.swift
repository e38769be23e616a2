#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Text from UTF-8 bytes that must be valid as they are.
enum UTF8Text {
    /// The bytes as a string, or nil when they are not valid UTF-8.
    ///
    /// `String(validating:as:)` is generic over the encoding and is not specialized for callers
    /// outside the standard library: every call looks its metadata up at run time, about a
    /// thousand instructions before any byte is read, which for the short strings of an event
    /// (tag values, ids) is most of the work. `String(decoding:as:)` is specialized for UTF-8 and
    /// replaces each invalid sequence with U+FFFD, so its output is always valid UTF-8: when
    /// the output is byte for byte the input, the input was valid; when the input was not, a
    /// replacement makes the two differ.
    static func string(validating bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var string = String(decoding: bytes, as: UTF8.self)
        let unchanged = string.withUTF8 { decoded in
            decoded.count == bytes.count
                && (bytes.isEmpty || memcmp(decoded.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return unchanged ? string : nil
    }

    static func string(validating bytes: some Collection<UInt8>) -> String? {
        if let result = bytes.withContiguousStorageIfAvailable({ string(validating: $0) }) { return result }
        return Array(bytes).withUnsafeBufferPointer { string(validating: $0) }
    }
}
