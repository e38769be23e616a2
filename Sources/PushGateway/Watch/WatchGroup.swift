package import NostrProtocol

/// The subscriptions of relays that watch the same pubkeys: `RELAYS`, for every pubkey this
/// instance holds, or one relay from users' own lists, for exactly the users whose plan watches
/// it there. Each group has its own chunks, REQ generations, schedule and closed chunks, so a
/// change to one user's relay re-issues one chunk on that relay only.
package struct WatchGroup: Sendable {
    enum Scope: Hashable, Sendable, CustomStringConvertible {
        /// `RELAYS` (and, for the same chunks, the kind 10050 lookups on `INDEXER_RELAYS`).
        case defaults
        /// One relay that users list, by its normal URL.
        case inbox(String)

        /// Subscription ids start with it: the ids of two groups sharing a connection never meet.
        var prefix: String {
            switch self {
            case .defaults: "w"
            case .inbox: "u"
            }
        }

        var description: String {
            switch self {
            case .defaults: "RELAYS"
            case .inbox(let url): url
            }
        }
    }

    /// A chunk a relay closed (`CLOSED`): how often in a row (for the backoff), and when to issue it
    /// again; `retryAt` is nil once re-issued, until an EOSE shows the relay took the chunk.
    package struct ClosedChunk: Sendable {
        var closures: Int
        var retryAt: ContinuousClock.Instant?

        /// How long after its `closures`-th CLOSED in a row a chunk's REQ is sent again. A relay
        /// that says it will not serve the gateway (`auth-required:` after the gateway's own AUTH,
        /// `restricted:`, `blocked:`) changes its mind rarely: 1 minute, doubling to an hour, so that it is
        /// never hammered. Any other CLOSED (`rate-limited:`, `error:`, none) is passing: 5 s,
        /// doubling to 5 minutes.
        package static func retryDelay(afterClosures closures: Int, reason: MachineReadablePrefix?) -> Duration {
            let doublings = min(max(closures, 1) - 1, 6)
            switch reason {
            case .authRequired?, .restricted?, .blocked?: return .seconds(min(3_600, 60 << doublings))
            default: return .seconds(min(300, 5 << doublings))
            }
        }
    }

    let scope: Scope
    var chunks: WatchChunks
    var generations: [Int: Int] = [:]
    var closedChunks: [Int: ClosedChunk] = [:]
    var schedule: ResubscribeSchedule

    init(scope: Scope, chunkSize: Int, resubscribeInterval: Duration) {
        self.scope = scope
        self.chunks = WatchChunks(size: chunkSize)
        self.schedule = ResubscribeSchedule(interval: resubscribeInterval)
    }

    /// The subscription id of `chunk`'s current REQ, if one was issued.
    func subscriptionID(_ chunk: Int, prefix: String? = nil) -> String? {
        generations[chunk].map { "\(prefix ?? scope.prefix)\(chunk).\($0)" }
    }

    /// Every subscription id the group has issued and not yet closed.
    var subscriptionIDs: [String] {
        generations.keys.sorted().compactMap { subscriptionID($0) }
    }
}
