import AsyncHTTPClient
import Logging
import NostrProtocol
import Synchronization

/// One HTTP client per endpoint host, each connecting that host's requests to the address its
/// check judged: AsyncHTTPClient's `dnsOverride` replaces its own lookup, while TLS (SNI and the
/// certificate check) and the `Host` header still name the host. Without it the client looked
/// the name up again to connect, and a name server answering a public address to the check and
/// a private one to the client (DNS rebinding) could aim a send into the gateway's network.
///
/// A host keeps its client while the address it connects to is among the judged ones (a name
/// served round robin keeps its connection); otherwise it gets a new client for the first judged
/// address, in the system resolver's order, skipping the one whose send last failed (an IPv6
/// address this network cannot reach, say, where a connection of the client's own would have
/// tried the next). The old client is retired: shut down once its last send has finished. At most
/// `limit` hosts keep a client: past it the least recently used is retired the same way.
final class PinnedHTTPClients: Sendable {
    private final class Entry: Sendable {
        let address: IPAddress
        let client: HTTPClient
        struct Use {
            var sends = 0
            var retired = false
            var lastUsed: ContinuousClock.Instant = .now
        }
        let use = Mutex(Use())

        init(address: IPAddress, client: HTTPClient) {
            self.address = address
            self.client = client
        }
    }

    let configuration: HTTPClient.Configuration
    let logger: Logger
    let limit: Int
    private let entries = Mutex<[String: Entry]>([:])
    /// Per host, the address whose last send failed: the next client goes elsewhere if it can.
    private let failed = Mutex<[String: IPAddress]>([:])
    /// Retired clients being shut down, so that `shutdown()` can wait for them.
    private let closing = Mutex<(next: Int, tasks: [Int: Task<Void, Never>])>((0, [:]))

    init(configuration: HTTPClient.Configuration, logger: Logger, limit: Int = 1_024) {
        self.configuration = configuration
        self.logger = logger
        self.limit = max(limit, 1)
    }

    /// Runs `body` with the client that connects `host` to one of `addresses` (not empty).
    func withClient<Result: Sendable>(
        host: String, addresses: [IPAddress], _ body: (HTTPClient) async throws -> Result
    ) async rethrows -> Result {
        let entry = checkOut(host: host, addresses: addresses)
        defer { checkIn(entry) }
        do {
            return try await body(entry.client)
        } catch {
            fail(host: host, entry)
            throw error
        }
    }

    /// Hosts that have a client now.
    var count: Int { entries.withLock { $0.count } }

    /// Shuts every client down, retired ones included (after the delivery worker stopped).
    func shutdown() async {
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return Array(entries.values)
        }
        for entry in all { try? await entry.client.shutdown() }
        for task in closing.withLock({ Array($0.tasks.values) }) { await task.value }
    }

    private func checkOut(host: String, addresses: [IPAddress]) -> Entry {
        var retired: [Entry] = []
        let avoided = failed.withLock { $0[host] }
        let entry = entries.withLock { entries -> Entry in
            if let current = entries[host], addresses.contains(current.address) {
                current.use.withLock { use in
                    use.sends += 1
                    use.lastUsed = .now
                }
                return current
            }
            if let stale = entries.removeValue(forKey: host) { retired.append(stale) }
            if entries.count >= limit,
                let oldest = entries.min(by: { $0.value.use.withLock(\.lastUsed) < $1.value.use.withLock(\.lastUsed) })
            {
                entries[oldest.key] = nil
                retired.append(oldest.value)
            }
            let address = addresses.first { $0 != avoided } ?? addresses[0]
            var configuration = self.configuration
            configuration.dnsOverride = [host: address.description]
            let fresh = Entry(
                address: address,
                client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger))
            fresh.use.withLock { $0.sends = 1 }
            entries[host] = fresh
            return fresh
        }
        for stale in retired { retire(stale) }
        return entry
    }

    /// A send on `entry` failed: its host's next send gets a client for another judged address.
    private func fail(host: String, _ entry: Entry) {
        failed.withLock { failed in
            if failed.count >= limit { failed.removeAll(keepingCapacity: true) }
            failed[host] = entry.address
        }
        let stale = entries.withLock { entries -> Entry? in
            guard entries[host] === entry else { return nil }
            return entries.removeValue(forKey: host)
        }
        if let stale { retire(stale) }
    }

    private func checkIn(_ entry: Entry) {
        let idleAndRetired = entry.use.withLock { use in
            use.sends -= 1
            return use.sends == 0 && use.retired
        }
        if idleAndRetired { close(entry) }
    }

    private func retire(_ entry: Entry) {
        let idle = entry.use.withLock { use in
            use.retired = true
            return use.sends == 0
        }
        if idle { close(entry) }
    }

    private func close(_ entry: Entry) {
        closing.withLock { closing in
            let number = closing.next
            closing.next += 1
            closing.tasks[number] = Task {
                try? await entry.client.shutdown()
                self.closing.withLock { _ = $0.tasks.removeValue(forKey: number) }
            }
        }
    }
}
