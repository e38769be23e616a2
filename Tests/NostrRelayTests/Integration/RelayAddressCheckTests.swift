import APNsSandbox
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

    /// The name `relay.invalid` can never resolve (RFC 6761), so a connection that reaches the
    /// relay went to the address the policy's own lookup answered, not to a second lookup's.
    @Test func aNameIsConnectedAtTheAddressItWasJudgedByAndTheRequestStillNamesTheHost() async throws {
        let relay = try HostileRelay()
        try await relay.start()
        defer { Task { await relay.stop() } }
        let asked = Locked<[String]>([])
        var configuration = RelayConnectionTests.configuration()
        configuration.addressPolicy = RelayAddressPolicy(allowsPrivate: true)
        configuration.resolver = { name in
            asked.withLock { $0.append(name) }
            return [IPAddress("127.0.0.1")!]
        }
        let url = "ws://relay.invalid:\(relay.port)"
        let connection = RelayConnection(url: url, configuration: configuration, logger: RelayConnectionTests.logger)
        try await connection.running {
            #expect(await RelayConnectionTests.waitFor(connection, .connected))
            // A whole exchange over it: the EVENT goes out masked, the OK comes back.
            let published = try await connection.publish(RelayConnectionTests.note(Keys.generate(), "pinned"))
            #expect(published.accepted)
        }
        #expect(asked.withLock { $0 }.allSatisfy { $0 == "relay.invalid" })
        #expect(!asked.withLock { $0 }.isEmpty)
        #expect(relay.records.first?.host == "relay.invalid:\(relay.port)", "the upgrade request names the URL's host")
    }

    /// Over TLS too the connection goes to the judged address while the handshake names the host:
    /// the certificate is checked against the name, so it passes for the name it was issued to
    /// and for no other, and only when its CA is trusted.
    @Test func overTLSTheCertificateIsCheckedAgainstTheHostNotTheAddress() async throws {
        let certificate = try SandboxCertificate.generate(hostnames: ["relay.invalid"])
        let relay = try HostileRelay(tls: certificate.serverTLSConfiguration())
        try await relay.start()
        defer { Task { await relay.stop() } }
        func configuration(trusting roots: [String]) -> RelayConfiguration {
            var configuration = RelayConnectionTests.configuration()
            configuration.addressPolicy = RelayAddressPolicy(allowsPrivate: true)
            configuration.resolver = { _ in [IPAddress("127.0.0.1")!] }
            configuration.additionalTrustRoots = roots
            return configuration
        }
        let trusted = try #require(certificate.caPEM)

        let named = RelayConnection(
            url: "wss://relay.invalid:\(relay.port)", configuration: configuration(trusting: [trusted]), logger: RelayConnectionTests.logger
        )
        try await named.running {
            #expect(await RelayConnectionTests.waitFor(named, .connected))
            let published = try await named.publish(RelayConnectionTests.note(Keys.generate(), "over TLS"))
            #expect(published.accepted)
        }
        #expect(relay.records.count == 1)

        for (url, roots) in [("wss://other.invalid:\(relay.port)", [trusted]), ("wss://relay.invalid:\(relay.port)", [])] {
            let refused = RelayConnection(url: url, configuration: configuration(trusting: roots), logger: RelayConnectionTests.logger)
            try await refused.running {
                #expect(
                    await eventually(within: 10) {
                        if case .failed = await refused.state { await refused.statistics.failures >= 2 } else { false }
                    }, "\(url) trusting \(roots.count) roots fails its handshakes")
            }
        }
        #expect(relay.records.count == 1, "no other connection got as far as the WebSocket upgrade")
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
