import NostrProtocol

/// Relay URLs and IP addresses as users and relay lists write them. Besides never crashing, an
/// accepted URL's normal form must be a fixed point (parsing it gives the same URL), stay within
/// the length limit, and hold nothing a connection or a log line must not see: no user info, no
/// fragment, no whitespace or control characters, ASCII only. An accepted address must print to
/// text that parses back to it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let url = try? RelayURL(text) {
        let normal = url.description
        check((try? RelayURL(normal)) == url, "normal form is not a fixed point: \(normal)")
        check(normal.hasPrefix("ws://") || normal.hasPrefix("wss://"), "not a WebSocket URL: \(normal)")
        check(normal.utf8.count <= RelayURL.maxLength, "normal form too long: \(normal.utf8.count)")
        check(
            normal.allSatisfy { $0.isASCII && !$0.isWhitespace && $0.asciiValue.map { $0 >= 0x20 && $0 != 0x7f } == true },
            "unclean: \(normal)")
        check(!normal.contains("#"), "fragment kept: \(normal)")
        let authority = normal.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).dropFirst(2).first ?? ""
        check(!authority.contains("@"), "user info kept: \(normal)")
        if case .address(let address) = url.host { check(IPAddress(address.description) == address, "host address does not round trip") }
    }
    if let address = IPAddress(text) {
        check(address.bytes.count == 4 || address.bytes.count == 16, "address of \(address.bytes.count) bytes")
        check(IPAddress(address.description) == address, "address does not round trip: \(address)")
        _ = address.isPublic
    }
    return 0
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
