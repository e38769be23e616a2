import Foundation
import LinkstrWire
public import Logging
import NostrProtocol
import NostrRelay

/// The linkstr client core: one per device, holding the signed-in account. The UI sends
/// `AppAction`s with `dispatch` (returns at once) or `perform` (waits for the outcome), renders
/// `updates`, and resyncs from `state()` when it sees a gap in `rev`.
///
/// Everything runs through one job queue, so actions, relay events and status changes are handled
/// one at a time in arrival order; the actor owns all state.
public actor LinkstrAppCore {
    enum Job: Sendable {
        case action(AppAction, CheckedContinuation<ActionResult, Never>?)
        case relayEvent(relay: String, subscription: String, SubscriptionEvent)
        case relayStatuses([String: RelayStatus])
        case barrier(CheckedContinuation<Void, Never>)
        /// The next step of a relay's history page (see `historyStep`).
        case historyStep(relay: String)
    }

    /// A page of history being worked off in steps.
    struct HistoryWork {
        enum Next {
            /// The live subscription's history: mark the restore done, fetch names, then page on.
            case firstPage(HistoryPager)
            case nextPage(HistoryPager)
        }

        var wraps: ArraySlice<NostrEvent>
        var messages: [LinkstrMessage] = []
        var applied = 0
        let origin: IngestOrigin
        let count: Int
        let oldest: Int64?
        let newest: Int64?
        let next: Next

        init(wraps: ArraySlice<NostrEvent>, origin: IngestOrigin, count: Int, oldest: Int64?, newest: Int64?, next: Next) {
            self.wraps = wraps
            self.origin = origin
            self.count = count
            self.oldest = oldest
            self.newest = newest
            self.next = next
        }
    }

    /// The signed-in account's loaded state.
    struct Account {
        var keys: Keys
        var store: AccountStore
        var ledger: LinkstrLedger
        var contacts: ContactBook
        var profiles: ProfileNames
        var relays: [RelayEntry]
        /// The NIP-17 inbox relays (kind 10050).
        var inbox: InboxRelayBook
        var archived: Set<String>
        var registrar: PushRegistrar?
        /// The registered device, so logout can unregister it with this account's key.
        var pushDevice: PushDevice?
        var me: String { keys.publicKey.hex }
    }

    struct PushDevice: Codable, Equatable {
        var token: String
        var environment: String
        var relayWatch: Bool
        /// The gateway's inbox relay, when registering added it to the account's kind 10050 list.
        var inboxRelay: String?
    }

    struct Backfill {
        var subscriptionID: String
        var pager: HistoryPager
        var events: [NostrEvent] = []
    }

    public nonisolated let updates: AsyncStream<AppUpdate>
    nonisolated let updateSink: AsyncStream<AppUpdate>.Continuation
    nonisolated let inbox: AsyncStream<Job>.Continuation
    let configuration: CoreConfiguration
    let logger: Logger
    let secrets: any SecretStore
    /// Nil when the database could not be opened; every action that needs it reports why.
    let store: LinkstrStore?
    let storeError: StoreError?
    package let pool: RelayPool
    let cache = ConversationKeyCache()

    var account: Account?
    var current = AppState()
    var listMode: SessionListMode = .active
    var openSessionID: String?
    var openPostID: String?
    var relayStatuses: [String: RelayStatus] = [:]
    var toast: String?
    /// Relays that connected in this foreground run (for the offline toast).
    var everConnected: Set<String> = []
    /// Per relay: wraps received before EOSE, ingested together as history when EOSE arrives.
    var historyBuffers: [String: [NostrEvent]] = [:]
    var liveRelays: Set<String> = []
    /// A ledger save failed in this relay run: no relay's floor moves (its history may not all be
    /// on disk).
    var historyUnsaved = false
    /// Per relay: the backfill page in flight (its subscription id, pager and events so far).
    var backfills: [String: Backfill] = [:]
    var backfillCounter = 0
    /// Per relay: the history page being applied in steps.
    var historyWork: [String: HistoryWork] = [:]
    /// People whose kind-0 names were asked for in this relay run.
    var profilesRequested: Set<String> = []
    /// Recipients' inbox relays (their kind 10050 lists) as last looked up, for the
    /// configuration's `recipientInboxRelaysTTL`; an empty list is remembered too (the recipient
    /// publishes none).
    var recipientInboxes: [String: (relays: [String], at: ContinuousClock.Instant)] = [:]
    /// A recipient's inbox relays a send publishes to at most (their list's first ones).
    static let maxRecipientInboxRelays = 5
    /// True when this relay run began with an empty ledger: its history arrives read (R12).
    var restoring = false
    /// Applied messages that would notify, newest last, at most the last 200 (see `NotificationDecision`).
    public internal(set) var notifications: [LinkstrLedger.Applied] = []
    private var loop: Task<Void, Never>?

    public init(configuration: CoreConfiguration, logger: Logger = Logger(label: "linkstr.core")) throws(StoreError) {
        self.configuration = configuration
        self.logger = logger
        if let secrets = configuration.secretStore {
            self.secrets = secrets
        } else {
            #if canImport(Security)
                self.secrets = KeychainSecretStore()
            #else
                self.secrets = try FileSecretStore(directory: configuration.dataDirectory.appendingPathComponent("secrets"))
            #endif
        }
        var opened: LinkstrStore?
        var failure: StoreError?
        do { opened = try LinkstrStore(path: configuration.dataDirectory.appendingPathComponent("linkstr.sqlite").path) } catch {
            failure = error
        }
        self.store = opened
        self.storeError = failure
        // Loaded here, not on the job loop, so `state()` shows the account from the first call.
        var startError: String?
        do {
            account = try Self.loadCurrentAccount(secrets: secrets, store: opened, configuration: configuration)
        } catch {
            startError = "\(error)"
        }
        self.pool = RelayPool(
            configuration: configuration.relayConfiguration,
            addressedPolicy: RelayAddressPolicy(allowsPrivate: configuration.allowPrivateRecipientRelays), logger: logger)
        (updates, updateSink) = AsyncStream<AppUpdate>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let (jobs, inbox) = AsyncStream<Job>.makeStream()
        self.inbox = inbox
        toast = failure?.description ?? startError
        current = AppState()
        Task { await self.start(jobs) }
    }

    private func start(_ jobs: AsyncStream<Job>) {
        refresh()
        loop = Task {
            for await job in jobs { await self.handle(job) }
        }
    }

    /// Queues `action` and returns at once.
    public nonisolated func dispatch(_ action: AppAction) {
        inbox.yield(.action(action, nil))
    }

    /// Queues `action` and waits until it has been handled.
    public func perform(_ action: AppAction) async -> ActionResult {
        await withCheckedContinuation { inbox.yield(.action(action, $0)) }
    }

    /// The current state with its `rev`.
    public func state() -> AppState {
        // Before the job loop's first refresh, publish what init loaded.
        if current.rev == 0 { refresh() }
        return current
    }

    /// Waits until every job queued before this call has been handled (tests and the CLI use it
    /// to let relay events settle).
    public func settle() async {
        await withCheckedContinuation { inbox.yield(.barrier($0)) }
    }

    /// Stops relays and the job loop, once the sends that outlived their publish (to a slow
    /// recipient inbox, say) have answered or timed out (`RelayPool.stop` waits for them).
    public func shutdown() async {
        await pool.stop()
        inbox.finish()
        updateSink.finish()
        loop?.cancel()
    }

    /// The pool's relay statuses. A relay that was up in this foreground run and drops gets a
    /// toast; failures during the initial connection stay quiet (the status row shows them).
    /// Applying the same statuses twice changes nothing.
    private func applyRelayStatuses(_ statuses: [String: RelayStatus]) {
        for (url, status) in statuses {
            if status == .connected { everConnected.insert(url) }
            if case .failed = status, everConnected.contains(url), relayStatuses[url] == .connected {
                toast = "relay offline: \(url)"
            }
        }
        relayStatuses = statuses
    }

    private func handle(_ job: Job) async {
        switch job {
        case .action(let action, let reply):
            let result: ActionResult
            do {
                result = try await run(action)
            } catch {
                result = .failed("\(error)")
                toast = "\(error)"
                // A refused send may have just turned a relay read-only. The pool reports that
                // through the inbox, behind this job: take it now, so the state a caller reads
                // after the failure already shows why.
                applyRelayStatuses(await pool.statuses)
            }
            refresh()
            reply?.resume(returning: result)
        case .relayEvent(let relay, let subscription, let event):
            await receive(event, relay: relay, subscription: subscription)
            refresh()
        case .relayStatuses(let statuses):
            applyRelayStatuses(statuses)
            refresh()
        case .barrier(let reply):
            reply.resume()
        case .historyStep(let relay):
            await historyStep(relay: relay)
            refresh()
        }
    }

    // MARK: Publishing state

    /// Rebuilds the slices and publishes each one that changed, one `rev` each.
    func refresh() {
        var next = buildState()
        next.rev = current.rev
        func publish(_ slice: AppUpdate.Slice) {
            next.rev += 1
            updateSink.yield(AppUpdate(rev: next.rev, slice: slice))
        }
        if next.identity != current.identity { publish(.identity(next.identity)) }
        if next.sessions != current.sessions { publish(.sessions(next.sessions)) }
        if next.feed != current.feed { publish(.feed(next.feed)) }
        if next.postDetail != current.postDetail { publish(.postDetail(next.postDetail)) }
        if next.contacts != current.contacts { publish(.contacts(next.contacts)) }
        if next.relays != current.relays { publish(.relays(next.relays)) }
        if next.toast != current.toast { publish(.toast(next.toast)) }
        current = next
    }

    /// Text someone else wrote (a relay's `CLOSED` reason) as a log value, escaped like relay
    /// text: nobody on the other end can forge or disguise a line of the app's log.
    nonisolated static func logValue(_ text: some StringProtocol) -> Logger.MetadataValue {
        "\(RelayTextLog.escape(text, maxLength: 200))"
    }

    /// An error as a log value, escaped the same way: errors can quote what a relay, a gateway or
    /// a sender wrote (an OK message, a response body, an unknown payload kind).
    nonisolated static func logValue(_ error: any Error) -> Logger.MetadataValue {
        logValue("\(error)")
    }
}
