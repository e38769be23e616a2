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
                for byte in name.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") || byte <= 0x20 || byte == 0x7F {
                    return "field name \(name) is not lower-case token characters"
                }
                switch name {
                case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
                    return "connection-specific field \(name)"
                case "te" where value != "trailers":
                    return "te other than trailers"
                default:
                    break
                }
            }
            if let problem = problem(inValue: value) { return "\(name): \(problem)" }
        }
        guard method, scheme, path else { return "a request without :method, :scheme and :path" }
        return nil
    }

    /// RFC 9113 §8.2.1: no NUL, CR or LF, and no white space at either end.
    package static func problem(inValue value: String) -> String? {
        let bytes = value.utf8
        if let first = bytes.first, first == 0x20 || first == 0x09 { return "white space first" }
        if let last = bytes.last, last == 0x20 || last == 0x09 { return "white space last" }
        for byte in bytes where byte == 0x00 || byte == 0x0A || byte == 0x0D { return "a NUL, CR or LF" }
        return nil
    }
}
