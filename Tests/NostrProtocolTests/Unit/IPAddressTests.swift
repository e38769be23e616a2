import NostrProtocol
import Testing

@Suite struct IPAddressTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("::1", "::1"), ("::", "::"), ("2001:DB8::1", "2001:db8::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"), ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("fe80:0:0:0:0:0:0:1", "fe80::1"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"), ("1::", "1::"),
    ])
    func textFormsParseAndPrintInTheirCanonicalForm(text: String, canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address, "the canonical form parses back to the same address")
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "0x7f.0.0.1", "127.1", ":::", "1:2:3:4:5:6:7:8:9",
        "1::2::3", "12345::", "fe80::1%eth0", "::ffff:1.2.3", "g::1", "1.2.3.4::", " 1.2.3.4",
    ])
    func malformedTextIsRefused(text: String) {
        #expect(IPAddress(text) == nil, "\(text)")
    }

    @Test(arguments: [
        "0.0.0.0", "10.1.2.3", "100.64.0.1", "100.127.255.255", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255",
        "192.0.0.8", "192.0.2.1", "192.168.1.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "239.1.1.1",
        "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::808:808", "100::1",
        "2001:db8::1", "2002:7f00:1::", "::ffff:0:7f00:1", "2001:0:4136:e378::1", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1",
        "ff02::1",
    ])
    func addressesThatDoNotLeadToThePublicInternetAreNotPublic(text: String) throws {
        #expect(try #require(IPAddress(text)).isPublic == false, "\(text)")
    }

    @Test(arguments: [
        "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1", "192.169.0.1", "198.20.0.1",
        "223.255.255.254", "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8",
        // What DNS64 answers for a public IPv4-only host on an IPv6-only network.
        "64:ff9b::808:808",
    ])
    func publicAddressesArePublic(text: String) throws {
        #expect(try #require(IPAddress(text)).isPublic, "\(text)")
    }

    @Test func anAddressBuiltWithTheWrongLengthIsNoAddressAndDoesNotTrap() {
        #expect(!IPAddress.v4([]).isPublic && !IPAddress.v6([0]).isPublic)
        #expect(IPAddress.v6([1, 2]).description == "invalid(2 bytes)" && IPAddress.v6([1]).mappedIPv4 == nil)
    }
}
