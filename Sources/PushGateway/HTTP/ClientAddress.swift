import Foundation

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
    /// The key of a client that reached us from `peer` with these `X-Forwarded-For` values: with
    /// `trustForwardedFor` (`RATE_LIMIT_TRUST_FORWARDED=1`) the address the trusted proxy in front
    /// appended, the last entry of the last value. Earlier entries are whatever the client sent,
    /// so trusting them would let it pick a fresh bucket per request. A forwarded entry that is
    /// not an IP address counts under the peer address instead.
    package static func key(peer: String?, forwardedFor: [String], trustForwardedFor: Bool) -> String {
        if trustForwardedFor, let forwarded = forwardedFor.last, let last = forwarded.split(separator: ",").last,
            let key = limiterKey(last.trimmingCharacters(in: .whitespaces))
        {
            return key
        }
        guard let peer else { return "unknown" }
        return limiterKey(peer) ?? peer
    }

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
