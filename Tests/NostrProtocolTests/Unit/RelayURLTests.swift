import NostrProtocol
import Testing

@Suite struct RelayURLTests {
    /// NIP-01's normalisation: scheme and host lowercased, the default port and a trailing slash
    /// removed; everything else as written.
    @Test(arguments: [
        ("wss://relay.example", "wss://relay.example"), ("WSS://Relay.Example/", "wss://relay.example"),
        ("wss://relay.example:443", "wss://relay.example"), ("ws://relay.example:80/", "ws://relay.example"),
        ("ws://relay.example:443", "ws://relay.example:443"), ("wss://relay.example:80", "wss://relay.example:80"),
        ("  wss://relay.example/inbox/  ", "wss://relay.example/inbox"), ("wss://relay.example/Inbox", "wss://relay.example/Inbox"),
        ("wss://relay.example.", "wss://relay.example"), ("wss://relay.example?x=1", "wss://relay.example/?x=1"),
        ("wss://relay.example/path?x=%2F", "wss://relay.example/path?x=%2F"), ("ws://127.0.0.1:7000", "ws://127.0.0.1:7000"),
        ("wss://xn--bcher-kva.example", "wss://xn--bcher-kva.example"), ("ws://f.example//fe//", "ws://f.example//fe"),
        ("wss://relay.example///", "wss://relay.example"),
    ])
    func spellingsOfOneRelayNormaliseToOne(text: String, normal: String) throws {
        let url = try RelayURL(text)
        #expect(url.description == normal)
        #expect(try RelayURL(url.description) == url, "the normal form is a fixed point")
    }

    @Test func equalURLsAreOneRelayInASet() throws {
        let urls: Set = [try RelayURL("wss://a.example"), try RelayURL("WSS://A.EXAMPLE:443/"), try RelayURL("wss://a.example/")]
        #expect(urls.count == 1)
    }

    @Test(arguments: [
        ("", RelayURLError.empty), ("https://relay.example", .notWebSocket), ("relay.example", .notWebSocket),
        ("wss:/relay.example", .notWebSocket), ("wss://user:pw@relay.example", .userInfo), ("wss://relay.example/#x", .fragment),
        ("wss://", .badHost), ("wss://:443", .badHost), ("wss://-relay.example", .badHost), ("wss://relay..example", .badHost),
        ("wss://relay_example.com", .badHost), ("wss://127.1", .badHost), ("wss://0x7f.0.0.1", .badHost),
        ("wss://2130706433", .badHost), ("wss://[::1", .ipv6Host), ("ws://[::1]:7777", .ipv6Host),
        ("ws://[2001:db8::1]/", .ipv6Host), ("wss://relay.example:0", .badPort), ("wss://relay.example:65536", .badPort),
        ("wss://relay.example:+443", .badPort), ("wss://relay.example:", .badPort), ("wss://relay.example/a b", .notASCII),
        ("wss://bücher.example", .notASCII), ("wss://relay.example/\u{7f}", .notASCII), ("wss://relay.example/<script>", .badPath),
        ("wss://relay.example/a\tb", .notASCII), ("wss://relay.example/a\r\nb", .notASCII), ("wss://relay.example/a\u{A0}b", .notASCII),
        ("wss://relay.example/\u{FF0F}", .notASCII), ("wss://relay.example\u{0}", .notASCII), ("wss://relay.example/a\"b", .badPath),
        ("wss://relay.example/^", .badPath), ("wss://relay.example/a`b|c", .badPath), ("wss://relay.example/{}", .badPath),
        ("wss://relay.example/" + String(repeating: "a", count: 600), .tooLong),
        // 512 bytes as written, 513 in normal form (`?` becomes `/?`): found by the fuzzer.
        ("wss://relay.example?" + String(repeating: "a", count: 492), .tooLong),
    ])
    func badURLsAreRefusedWithTheirReason(text: String, error: RelayURLError) {
        #expect(throws: error) { try RelayURL(text) }
    }

    @Test func theHostIsANameOrAnAddress() throws {
        #expect(try RelayURL("wss://relay.example").host == .name("relay.example"))
        #expect(try RelayURL("ws://10.0.0.1").host == .address(IPAddress("10.0.0.1")!))
        #expect(try RelayURL("wss://relay.example").isSecure && !(try RelayURL("ws://relay.example").isSecure))
    }
}
