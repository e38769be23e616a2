import NostrProtocol
import NostrRelay
import Testing

@Suite struct RelayAddressPolicyTests {
    let strict = RelayAddressPolicy(allowsPrivate: false)
    let open = RelayAddressPolicy(allowsPrivate: true)

    @Test(arguments: [
        "ws://127.0.0.1:7777", "ws://10.0.0.5", "ws://169.254.169.254/latest", "ws://0.0.0.0", "ws://localhost:5432", "ws://db.localhost",
        "ws://printer.local", "ws://metadata.internal",
        "ws://router.home.arpa", "ws://postgres",
    ])
    func urlsIntoThePrivateNetworkAreRefusedUnlessAllowed(text: String) throws {
        let url = try RelayURL(text)
        #expect(strict.refusal(for: url) != nil, "\(text)")
        #expect(open.refusal(for: url) == nil, "\(text)")
    }

    @Test(arguments: ["wss://relay.damus.io", "wss://nos.lol/", "ws://1.1.1.1:8080", "wss://local.example"])
    func publicURLsMayBeTried(text: String) throws {
        #expect(strict.refusal(for: try RelayURL(text)) == nil, "\(text)")
    }

    @Test func aNameIsJudgedByEveryAddressItResolvesTo() {
        let publicAddress = IPAddress("93.184.215.14")!, privateAddress = IPAddress("10.1.1.1")!
        #expect(strict.refusal(resolved: [publicAddress]) == nil)
        #expect(strict.refusal(resolved: [IPAddress("::ffff:192.168.1.1")!]) != nil, "a mapped private IPv4")
        #expect(strict.refusal(resolved: [IPAddress("fd00::1")!, IPAddress("2606:4700::1111")!]) != nil)
        #expect(strict.refusal(resolved: [publicAddress, privateAddress]) == "resolves to a non-public address")
        #expect(strict.refusal(resolved: []) == "resolves to no address")
        #expect(open.refusal(resolved: [privateAddress]) == nil)
    }
}
