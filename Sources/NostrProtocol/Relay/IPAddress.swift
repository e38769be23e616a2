/// An IPv4 or IPv6 address as its bytes (4 or 16), parsed from its text form, with what a server
/// that connects to addresses others chose needs to know: whether it reaches the public internet.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4([UInt8])
    case v6([UInt8])

    /// Dotted-quad IPv4 (`192.0.2.1`: four decimal parts, no leading zeros, which some resolvers
    /// read as octal) or IPv6 in any RFC 4291 text form, zone ids refused. Nil for anything else.
    public init?(_ text: some StringProtocol) {
        if let bytes = Self.parseV4(Substring(text)) {
            self = .v4(bytes)
        } else if let bytes = Self.parseV6(Substring(text)) {
            self = .v6(bytes)
        } else {
            return nil
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .v4(let bytes), .v6(let bytes): bytes
        }
    }

    /// The text form: dotted quad, or RFC 5952 IPv6 (lowercase, the longest run of zero groups
    /// compressed).
    public var description: String {
        switch self {
        case .v4(let bytes) where bytes.count != 4, .v6(let bytes) where bytes.count != 16:
            return "invalid(\(bytes.count) bytes)"
        case .v4(let bytes): return bytes.map(String.init).joined(separator: ".")
        case .v6(let bytes):
            let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            var best: Range<Int>?
            var index = 0
            while index < 8 {
                guard groups[index] == 0 else {
                    index += 1
                    continue
                }
                var end = index
                while end < 8, groups[end] == 0 { end += 1 }
                if end - index >= 2, end - index > (best?.count ?? 0) { best = index..<end }
                index = end
            }
            let hex = groups.map { String($0, radix: 16) }
            guard let best else { return hex.joined(separator: ":") }
            return hex[..<best.lowerBound].joined(separator: ":") + "::" + hex[best.upperBound...].joined(separator: ":")
        }
    }

    /// The IPv4 address an IPv6 one carries (`::ffff:a.b.c.d`, mapped), else nil: a connection to
    /// it reaches that IPv4 address, so it is judged as one.
    public var mappedIPv4: IPAddress? {
        guard case .v6(let bytes) = self, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff
        else {
            return nil
        }
        return .v4(Array(bytes[12..<16]))
    }

    /// False for every address that does not lead to the public internet: unspecified, loopback,
    /// private (RFC 1918, RFC 4193), shared (RFC 6598), link-local, multicast, broadcast,
    /// documentation and benchmarking ranges, and the IPv4-in-IPv6 forms of any of those.
    public var isPublic: Bool {
        if let mapped = mappedIPv4 { return mapped.isPublic }
        // NAT64's well-known prefix (64:ff9b::/96, RFC 6052): what a DNS64 resolver answers for an
        // IPv4-only host on an IPv6-only network. It leads where its embedded IPv4 leads.
        if case .v6(let b) = self, b.count == 16, b[0] == 0x00, b[1] == 0x64, b[2] == 0xff, b[3] == 0x9b,
            b[4..<12].allSatisfy({ $0 == 0 })
        {
            return IPAddress.v4(Array(b[12..<16])).isPublic
        }
        switch self {
        case .v4(let b) where b.count != 4, .v6(let b) where b.count != 16:
            return false // built by hand with the wrong length: no address at all
        case .v4(let b):
            return
                !(b[0] == 0 // "this network"
                || b[0] == 10 // private
                || (b[0] == 100 && b[1] & 0xc0 == 64) // shared address space (carrier NAT)
                || b[0] == 127 // loopback
                || (b[0] == 169 && b[1] == 254) // link-local
                || (b[0] == 172 && b[1] & 0xf0 == 16) // private
                || (b[0] == 192 && b[1] == 0 && b[2] == 0) // IETF protocol assignments
                || (b[0] == 192 && b[1] == 0 && b[2] == 2) // documentation
                || (b[0] == 192 && b[1] == 168) // private
                || (b[0] == 198 && b[1] & 0xfe == 18) // benchmarking
                || (b[0] == 198 && b[1] == 51 && b[2] == 100) // documentation
                || (b[0] == 203 && b[1] == 0 && b[2] == 113) // documentation
                || b[0] >= 224) // multicast, reserved, broadcast
        case .v6(let b):
            let allZeroPrefix = b[0..<15].allSatisfy { $0 == 0 }
            return
                !((allZeroPrefix && (b[15] == 0 || b[15] == 1)) // unspecified, loopback
                || b[0..<12].allSatisfy { $0 == 0 } // IPv4-compatible (deprecated)
                || (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) // NAT64 local-use (64:ff9b:1::/48) and others
                || (b[0] == 0x01 && b[1] == 0x00 && b[2..<8].allSatisfy { $0 == 0 }) // discard-only
                // SIIT (::ffff:0:0/96): reaches an IPv4 chosen by the caller
                || (b[0..<8].allSatisfy { $0 == 0 } && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0)
                || (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) // Teredo: an IPv4 the caller chose
                || (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) // documentation
                || (b[0] == 0x20 && b[1] == 0x02) // 6to4: reaches an IPv4 chosen by the caller
                || b[0] & 0xfe == 0xfc // unique local
                || (b[0] == 0xfe && b[1] & 0xc0 == 0x80) // link-local
                || (b[0] == 0xfe && b[1] & 0xc0 == 0xc0) // site-local (deprecated)
                || b[0] == 0xff) // multicast
        }
    }

    private static func parseV4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), part.count == 1 || part.first != "0",
                let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    private static func parseV6(_ text: Substring) -> [UInt8]? {
        guard text.count >= 2, text.count <= 45, text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        let halves = Self.splitAtDoubleColons(text)
        guard halves.count <= 2 else { return nil }
        func groups(_ part: Substring, allowV4: Bool) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if piece.contains(".") {
                    guard allowV4, index == pieces.count - 1, let v4 = parseV4(piece) else { return nil }
                    result += [UInt16(v4[0]) << 8 | UInt16(v4[1]), UInt16(v4[2]) << 8 | UInt16(v4[3])]
                } else {
                    guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                    result.append(value)
                }
            }
            return result
        }
        let all: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0], allowV4: false), let tail = groups(halves[1], allowV4: true), head.count + tail.count <= 7
            else { return nil }
            all = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let only = groups(halves[0], allowV4: true), only.count == 8 else { return nil }
            all = only
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }
}

extension IPAddress {
    /// `text` cut at each `::`.
    fileprivate static func splitAtDoubleColons(_ text: Substring) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == ":", next < text.endIndex, text[next] == ":" {
                parts.append(text[start..<index])
                start = text.index(after: next)
                index = start
            } else {
                index = next
            }
        }
        parts.append(text[start...])
        return parts
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
