#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key the per-address limit counts a client under.
///
/// An IPv4 address counts alone. An IPv6 client counts by its /64: one subscriber is usually given
/// a whole /64 (often more), so per-address buckets would hand an attacker 2^64 fresh ones. An
/// IPv4-mapped IPv6 address counts as its IPv4 address. Text that is not an IP address has no key.
package enum ClientAddress {
    package static func limiterKey(_ text: some StringProtocol) -> String? {
        let text = String(text)
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return text }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let hex = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return hex.joined(separator: ":") + "::/64"
    }
}
