package import NIOHPACK

/// The HTTP/2 rules a request's header block must keep (RFC 9113 §8.2 and §8.3), checked in one
/// pass over its bytes. A request that breaks one is malformed, and the sandbox resets its stream
/// (PROTOCOL_ERROR) as NIOHTTP2 would. NIOHTTP2's own check of every header block received and
/// sent was 14 % of the sandbox's CPU per push; this one reads each name and value once and
/// allocates nothing. The gateway sends its APNs requests unchecked
/// (`HTTP2ConnectionPool`), so in the tests this is where a malformed request shows.
package enum HeaderBlockCheck {
    /// nil when `headers` form a well-formed request; otherwise what is wrong.
    package static func problem(in headers: HPACKHeaders) -> String? {
        var seenRegular = false
        var method = false, scheme = false, path = false
        for (name, value, _) in headers {
            guard let first = name.utf8.first else { return "an empty field name" }
            if first == UInt8(ascii: ":") {
                // Pseudo-headers: only a request's four, each once, all before the other fields.
                guard !seenRegular else { return "pseudo-header \(name) after a regular field" }
                switch name {
                case ":method":
                    guard !method else { return "two :method" }
                    method = true
                case ":scheme":
                    guard !scheme else { return "two :scheme" }
                    scheme = true
                case ":path":
                    guard !path else { return "two :path" }
                    guard !value.isEmpty else { return "an empty :path" }
                    path = true
                case ":authority":
                    continue
                default:
                    return "pseudo-header \(name) is not a request's"
                }
            } else {
                seenRegular = true
                guard isLowercaseToken(name) else { return "field name \(name) is not lower-case token characters" }
                // Only a name of one of their lengths can be one of the fields refused by name:
                // most requests' names never reach the string comparisons.
                if connectionSpecificLengths.contains(name.utf8.count) {
                    switch name {
                    case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
                        return "connection-specific field \(name)"
                    case "te" where value != "trailers":
                        return "te other than trailers"
                    default:
                        break
                    }
                }
            }
            if let problem = problem(inValue: value) { return "\(name): \(problem)" }
        }
        guard method, scheme, path else { return "a request without :method, :scheme and :path" }
        return nil
    }

    /// The lengths of "te", "upgrade", "connection" and "keep-alive", "proxy-connection", and
    /// "transfer-encoding".
    private static let connectionSpecificLengths: Set<Int> = [2, 7, 10, 16, 17]

    /// No upper-case letter, space, control character or DEL (RFC 9113 §8.2.1).
    private static func isLowercaseToken(_ name: String) -> Bool {
        withBytes(of: name) { bytes in
            !bytes.contains { byte in byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") || byte <= 0x20 || byte == 0x7F }
        }
    }

    /// RFC 9113 §8.2.1: no NUL, CR or LF, and no white space at either end.
    package static func problem(inValue value: String) -> String? {
        withBytes(of: value) { bytes in
            if let first = bytes.first, first == 0x20 || first == 0x09 { return "white space first" }
            if let last = bytes.last, last == 0x20 || last == 0x09 { return "white space last" }
            return containsNULCROrLF(bytes) ? "a NUL, CR or LF" : nil
        }
    }

    /// `body` over the string's UTF-8 bytes in one buffer (a native string's own storage).
    private static func withBytes<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    /// Whether any byte is 0x00, 0x0A or 0x0D, eight bytes at a time: a provider token alone is
    /// some 250 bytes of every request. Exact, not a hint: `(x − 0x01…) & ~x & 0x80…` is non-zero
    /// exactly when some byte of `x` is zero, and a byte of `word ^ 0x0A…` is zero exactly where
    /// `word` holds 0x0A.
    static func containsNULCROrLF(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
        var index = 0
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                if hasZeroByte(word) || hasZeroByte(word ^ (ones &* 0x0A)) || hasZeroByte(word ^ (ones &* 0x0D)) { return true }
                index += 8
            }
        }
        while index < bytes.count {
            if bytes[index] == 0x00 || bytes[index] == 0x0A || bytes[index] == 0x0D { return true }
            index += 1
        }
        return false
    }
}
