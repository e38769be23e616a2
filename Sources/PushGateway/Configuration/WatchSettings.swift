import Foundation
public import NostrProtocol
public import NostrRelay

/// The relay watcher's settings. Watching is off when `RELAYS` is empty.
public struct WatchSettings: Sendable {
    /// `RELAYS`: comma-separated ws:// or wss:// URLs, kept in their normal form (`RelayURL`), so
    /// two spellings of one relay are one connection.
    public var relays: [String]
    /// `INDEXER_RELAYS` (default `RELAYS`): where watched users' NIP-17 relay lists (kind 10050)
    /// are looked up and followed, in normal form.
    public var indexerRelays: [String]
    /// `WATCH_MAX_RELAYS` (default 500): relays one instance connects to in all, `RELAYS`
    /// included; the users' relays that most of its users list win (`RelayWatchPlan`).
    public var maxRelays: Int
    /// `WATCH_MAX_RELAYS_PER_USER` (default 5): relays beyond `RELAYS` watched for one user.
    public var maxRelaysPerUser: Int
    /// `WATCH_CHUNK_SIZE` (default 500): `#p` values per REQ; a registration re-issues one chunk.
    public var chunkSize: Int
    /// `WATCH_COALESCE_SECONDS` (default 5): at most one relay-watch push per device this often.
    public var coalesceSeconds: Int
    /// `WATCH_SHARDS` (default 64): the pubkey space is split into this many leased shards.
    /// Every instance sharing a database must use the same value.
    public var shards: Int
    /// `WATCH_LEASE_SECONDS` (default 30): a shard whose owner stopped renewing is taken over
    /// after this long.
    public var leaseSeconds: Int
    /// `GATEWAY_NSEC`: the key that answers NIP-42 AUTH; generated and stored in the database
    /// when unset.
    public var gatewayKey: SecretKey?
    /// `WATCH_RELAY_MAX_EVENTS_PER_SECOND` (default 20,000; 0: no limit): messages of any kind one
    /// relay may send per second, averaged over 10 s; a relay above it is disconnected and
    /// reconnected after a growing backoff. Four times what the watcher benchmark streams from
    /// one relay, and an average, so a relay replaying stored events after a reconnect fits.
    public var relayMaxEventsPerSecond: Int
    /// `WATCH_RELAY_MAX_INVALID` (default 100; 0: no limit): invalid events (not a gift wrap to
    /// exactly one pubkey the subscription asked for, a bad id, a bad signature, an unreadable
    /// message) one relay may send within a minute; one more and it is disconnected like a flood.
    public var relayMaxInvalid: Int
    /// `WATCH_RESUBSCRIBE_SECONDS` (default 2; 0: at once): a chunk's REQ is sent again at most
    /// this often per relay; the changes in between go out together (`ResubscribeSchedule`).
    public var resubscribeSeconds: Int
    /// `WATCH_ALLOW_PRIVATE_RELAYS=1`: relay URLs that users supply may name loopback, private,
    /// link-local or other non-public addresses (tests, private deployments). Off, they are
    /// refused, so that nobody can make the gateway connect into its own network.
    public var allowPrivateRelays: Bool
    /// The gateway's own inbox relay when it serves one (`INBOX_RELAY=1`): users who list it are
    /// served, not watched there (`GatewayConfiguration.watchSettings` sets it).
    public var ownInboxRelay: String?

    /// Gift wraps carry timestamps randomised up to two days into the past (NIP-59), so the
    /// subscription looks back that far and suppressions live that long.
    public static let windowSeconds: Int64 = 2 * 86_400
    /// How long a wrap that arrived only as one relay's history can still be pushed when another
    /// relay forwards it in real time (the two saw the same new wrap at about the same moment).
    /// Longer would risk pushing an old wrap re-broadcast to a second relay.
    public static let historyRaceSeconds = 120
    /// Seen wraps are kept longer than the window, so a re-sent REQ never re-pushes one.
    public static let seenRetentionSeconds: Int64 = 3 * 86_400
    /// Sightings waiting for the ingest loop in each lane (`RELAYS`, users' own relays); past that,
    /// that lane's consumers wait, and with them the reading of those relays' sockets (about 300
    /// bytes each: 2.5 MB a lane, 1.6 s of the benchmark's 5,000 wraps/s).
    public static let sightingBufferLimit = 8_192
    /// Bytes of relay messages each relay connection holds for its consumers (`RelayConfiguration`).
    public static let relayBufferBytes = 4 << 20
    /// A relay whose socket went unread this long (consumers behind, PostgreSQL down) is asked
    /// for every subscription again from before the pause: a relay may have dropped, not queued,
    /// what it could not send meanwhile.
    public static let resubscribeAfterPause: Duration = .seconds(5)

    /// What a user's relay may send: it carries the wraps of the few users who list it, so far less
    /// than `RELAYS`, and its URL came from a user. Each holds at most `userRelayBufferBytes` unread.
    public var userRelayLimits: RelayLimits {
        RelayLimits(maxEventsPerSecond: min(relayLimits.maxEventsPerSecond ?? 500, 500), maxInvalid: min(relayLimits.maxInvalid ?? 20, 20))
    }

    public static let userRelayBufferBytes = 256 << 10

    /// The limits each relay connection applies.
    public var relayLimits: RelayLimits {
        RelayLimits(
            maxEventsPerSecond: relayMaxEventsPerSecond > 0 ? relayMaxEventsPerSecond : nil,
            maxInvalid: relayMaxInvalid > 0 ? relayMaxInvalid : nil)
    }

    public var enabled: Bool { !relays.isEmpty }

    public init(
        relays: [String] = [], indexerRelays: [String]? = nil, maxRelays: Int = 500, maxRelaysPerUser: Int = 5, chunkSize: Int = 500,
        coalesceSeconds: Int = 5, shards: Int = 64, leaseSeconds: Int = 30,
        gatewayKey: SecretKey? = nil, relayMaxEventsPerSecond: Int = 20_000, relayMaxInvalid: Int = 100, resubscribeSeconds: Int = 2,
        allowPrivateRelays: Bool = false
    ) {
        self.relays = relays
        self.indexerRelays = indexerRelays ?? relays
        self.maxRelays = maxRelays
        self.maxRelaysPerUser = maxRelaysPerUser
        self.chunkSize = chunkSize
        self.coalesceSeconds = coalesceSeconds
        self.shards = shards
        self.leaseSeconds = leaseSeconds
        self.gatewayKey = gatewayKey
        self.relayMaxEventsPerSecond = relayMaxEventsPerSecond
        self.relayMaxInvalid = relayMaxInvalid
        self.resubscribeSeconds = resubscribeSeconds
        self.allowPrivateRelays = allowPrivateRelays
    }

    package static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> WatchSettings {
        let relays = try relayList(env, "RELAYS")
        let indexers = try relayList(env, "INDEXER_RELAYS")
        var key: SecretKey?
        if let text = env["GATEWAY_NSEC"], !text.isEmpty {
            do { key = try SecretKey(parsing: text) } catch {
                throw ConfigurationError(key: "GATEWAY_NSEC", "an nsec1… or 64-character hex secret key")
            }
        }
        let defaults = WatchSettings()
        return WatchSettings(
            relays: relays,
            indexerRelays: indexers.isEmpty ? relays : indexers,
            maxRelays: try limit(
                env, "WATCH_MAX_RELAYS", 1...100_000, default: defaults.maxRelays, "relays one instance watches, RELAYS included"),
            maxRelaysPerUser: try limit(
                env, "WATCH_MAX_RELAYS_PER_USER", 0...20, default: defaults.maxRelaysPerUser,
                "relays beyond RELAYS watched for one user"),
            chunkSize: try ConfigurationError.integer(env, "WATCH_CHUNK_SIZE", 1...5000, default: defaults.chunkSize),
            coalesceSeconds: try ConfigurationError.integer(env, "WATCH_COALESCE_SECONDS", 0...3600, default: defaults.coalesceSeconds),
            shards: try ConfigurationError.integer(env, "WATCH_SHARDS", 1...4096, default: defaults.shards),
            leaseSeconds: try ConfigurationError.integer(env, "WATCH_LEASE_SECONDS", 2...600, default: defaults.leaseSeconds),
            gatewayKey: key,
            relayMaxEventsPerSecond: try limit(
                env, "WATCH_RELAY_MAX_EVENTS_PER_SECOND", 0...1_000_000, default: defaults.relayMaxEventsPerSecond,
                "messages a relay may send per second, averaged over 10 s (0: no limit)"),
            relayMaxInvalid: try limit(
                env, "WATCH_RELAY_MAX_INVALID", 0...1_000_000, default: defaults.relayMaxInvalid,
                "invalid events a relay may send within a minute (0: no limit)"),
            resubscribeSeconds: try limit(
                env, "WATCH_RESUBSCRIBE_SECONDS", 0...60, default: defaults.resubscribeSeconds,
                "seconds between two REQs for one subscription chunk (0: at once)"),
            allowPrivateRelays: ConfigurationError.flag(env, "WATCH_ALLOW_PRIVATE_RELAYS"))
    }

    /// A comma-separated list of relay URLs in normal form, each once.
    private static func relayList(_ env: [String: String], _ key: String) throws(ConfigurationError) -> [String] {
        var relays: [String] = []
        for item in (env[key] ?? "").split(separator: ",") {
            let text = item.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            let url: String
            do { url = try RelayURL(text).description } catch { throw ConfigurationError(key: key, "\(text) \(error)") }
            if !relays.contains(url) { relays.append(url) }
        }
        return relays
    }

    /// An integer setting whose error says what it is for, not just its range.
    private static func limit(
        _ env: [String: String], _ key: String, _ range: ClosedRange<Int>, default value: Int,
        _ meaning: String
    ) throws(ConfigurationError) -> Int {
        do {
            return try ConfigurationError.integer(env, key, range, default: value)
        } catch {
            throw ConfigurationError(key: key, "\(meaning): \(error.problem)")
        }
    }
}
