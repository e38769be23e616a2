package import AsyncHTTPClient
package import Logging
package import NostrProtocol
import Synchronization

/// One HTTP client per endpoint host (a name, or an IP literal that is its own address), each
/// connecting that host's requests to the address its check judged: AsyncHTTPClient's `dnsOverride` replaces its own lookup, while TLS (SNI and the
/// certificate check) and the `Host` header still name the host. Without it the client looked
/// the name up again to connect, and a name server answering a public address to the check and
/// a private one to the client (DNS rebinding) could aim a send into the gateway's network.
///
/// - A host keeps its client while the client's address is among the judged ones (a name served
///   round robin keeps its connection). Otherwise it gets a new client for the first judged
///   address in the system resolver's order, skipping the one whose send last failed when there
///   is another (an IPv6 address this network cannot reach, say, where a connection of the
///   client's own would have tried the next).
/// - A client is retired when its host's judged addresses no longer include its own, when a send
///   on it fails while another address was judged, when it has been idle `idleLimit`, or, past
///   `limit` hosts, when it is the least recently used; it is shut down once its last send has
///   finished. Each client holds its own TLS context (the trust store parsed once per client),
///   so neither many hosts nor idle ones may keep clients for long.
package final class PinnedHTTPClients: Sendable {
    private final class Entry: Sendable {
        let address: IPAddress
        let client: HTTPClient
        struct Use {
            var sends = 0
            var retired = false
            var closed = false
            var lastUsed: ContinuousClock.Instant = .now
        }
        let use = Mutex(Use())

        init(address: IPAddress, client: HTTPClient) {
            self.address = address
            self.client = client
        }
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Per host, the address whose last send failed: the next client goes elsewhere if it can.
        var failed: [String: IPAddress] = [:]
        var shutDown = false
    }

    let configuration: HTTPClient.Configuration
    let logger: Logger
    let limit: Int
    let idleLimit: Duration
    private let state = Mutex(State())
    /// Retired clients being shut down, so that `shutdown()` can wait for them.
    private let closing = Mutex<(next: Int, tasks: [Int: Task<Void, Never>])>((0, [:]))

    package init(configuration: HTTPClient.Configuration, logger: Logger, limit: Int = 256, idleLimit: Duration = .seconds(60)) {
        self.configuration = configuration
        self.logger = logger
        self.limit = max(limit, 1)
        self.idleLimit = idleLimit
    }

    /// Runs `body` with the client that connects `host` to one of `addresses` (not empty);
    /// throws `CancellationError` once shut down.
    package func withClient<Result: Sendable>(
        host: String, addresses: [IPAddress], _ body: (HTTPClient) async throws -> Result
    ) async throws -> Result {
        guard let entry = checkOut(host: host, addresses: addresses) else { throw CancellationError() }
        defer { checkIn(entry) }
        do {
            let result = try await body(entry.client)
            state.withLock { state in
                if state.failed[host] == entry.address { state.failed[host] = nil }
            }
            return result
        } catch {
            if addresses.count > 1 { fail(host: host, entry) }
            throw error
        }
    }

    /// Hosts that have a client now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// Shuts every client down, retired ones included, and makes no new ones (after the
    /// delivery worker stopped).
    package func shutdown() async {
        let all = state.withLock { state in
            state.shutDown = true
            defer { state.entries.removeAll() }
            return Array(state.entries.values)
        }
        // Sends still running (one past its deadline, say) are cut off: nothing is sent after this.
        for entry in all { close(entry) }
        while let task = closing.withLock({ $0.tasks.values.first }) { await task.value }
    }

    private func checkOut(host: String, addresses: [IPAddress]) -> Entry? {
        var retired: [Entry] = []
        let entry = state.withLock { state -> Entry? in
            guard !state.shutDown else { return nil }
            if let current = state.entries[host], addresses.contains(current.address) {
                current.use.withLock { use in
                    use.sends += 1
                    use.lastUsed = .now
                }
                return current
            }
            if let stale = state.entries.removeValue(forKey: host) { retired.append(stale) }
            // Making a client is the rare, costly path: the idle ones, and past the limit the
            // least recently used, make room here.
            let now = ContinuousClock.now
            for (name, entry) in state.entries where entry.use.withLock({ $0.sends == 0 && now - $0.lastUsed > idleLimit }) {
                state.entries[name] = nil
                retired.append(entry)
            }
            if state.entries.count >= limit,
                let oldest = state.entries.min(by: { $0.value.use.withLock(\.lastUsed) < $1.value.use.withLock(\.lastUsed) })
            {
                state.entries[oldest.key] = nil
                retired.append(oldest.value)
            }
            let avoided = state.failed[host]
            let address = addresses.first { $0 != avoided } ?? addresses[0]
            var configuration = self.configuration
            configuration.dnsOverride = [host: address.description]
            let fresh = Entry(
                address: address,
                client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger))
            fresh.use.withLock { $0.sends = 1 }
            state.entries[host] = fresh
            return fresh
        }
        for stale in retired { retire(stale) }
        return entry
    }

    /// A send on `entry` failed: its host's next send gets a client for another judged address.
    private func fail(host: String, _ entry: Entry) {
        let stale = state.withLock { state -> Entry? in
            if state.failed.count >= limit { state.failed.removeAll(keepingCapacity: true) }
            state.failed[host] = entry.address
            guard state.entries[host] === entry else { return nil }
            return state.entries.removeValue(forKey: host)
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

    /// Shuts `entry`'s client down, once however often it is asked.
    private func close(_ entry: Entry) {
        let first = entry.use.withLock { use in
            defer { use.closed = true }
            return !use.closed
        }
        guard first else { return }
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
