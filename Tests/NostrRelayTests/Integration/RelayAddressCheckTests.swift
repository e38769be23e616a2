import NostrProtocol
import NostrRelay
import TestSupport
import Testing

/// A connection with an address policy against a relay on loopback, and the system resolver the
/// policy's name check uses.
@Suite(.serialized) struct RelayAddressCheckTests {
    @Test func aPolicyRefusesALoopbackRelayWithoutConnectingAndAllowsItWhenPrivateIsAllowed() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        defer { Task { await relay.stop() } }
        var strict = RelayConnectionTests.configuration()
        strict.addressPolicy = RelayAddressPolicy(allowsPrivate: false)
        let refused = RelayConnection(url: relay.url, configuration: strict, logger: RelayConnectionTests.logger)
        try await refused.running {
            #expect(await RelayConnectionTests.waitFor(refused, .refused("names a non-public address")))
            _ = await refused.subscribe(id: "s", filters: [Filter(kinds: [1])])
            #expect(await refused.statistics.failures >= 1)
        }
        #expect(relay.records.isEmpty, "no connection reached the relay")

        var open = RelayConnectionTests.configuration()
        open.addressPolicy = RelayAddressPolicy(allowsPrivate: true)
        let allowed = RelayConnection(url: relay.url, configuration: open, logger: RelayConnectionTests.logger)
        try await allowed.running {
            #expect(await RelayConnectionTests.waitFor(allowed, .connected))
        }
    }

    @Test func localhostResolvesToLoopbackAddressesOnly() async throws {
        let addresses = try await HostResolver.addresses(of: "localhost")
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { !$0.isPublic }, "\(addresses)")
        // The check a connection makes for a name: any non-public address refuses it.
        #expect(RelayAddressPolicy(allowsPrivate: false).refusal(resolved: addresses) == "resolves to a non-public address")
        #expect(RelayAddressPolicy(allowsPrivate: true).refusal(resolved: addresses) == nil)
    }
}
