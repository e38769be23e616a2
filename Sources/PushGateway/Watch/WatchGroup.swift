/// The subscriptions of relays that watch the same pubkeys: `RELAYS`, for every pubkey this
/// instance holds, or one relay from users' own lists, for exactly the users whose plan watches
/// it there. Each group has its own chunks, REQ generations, schedule and closed chunks, so a
/// change to one user's relay re-issues one chunk on that relay only.
struct WatchGroup: Sendable {
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
    struct ClosedChunk: Sendable {
        var closures: Int
        var retryAt: ContinuousClock.Instant?
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
