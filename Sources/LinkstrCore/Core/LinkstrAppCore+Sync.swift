import Foundation
import LinkstrWire
import Logging
import NostrProtocol
import NostrRelay

extension LinkstrAppCore {
    static let liveSubscription = "linkstr-live"
    static let followSubscription = "linkstr-follows"
    static let inboxSubscription = "linkstr-inbox-relays"
    /// Gift wraps are backdated up to two days (NIP-59), so a live subscription looks that far back.
    package static let wrapBackdating: Int64 = 172_800

    /// Builds the relay connections from scratch (a foreground start behaves like a cold open)
    /// with the live and follow-list subscriptions of docs/linkstr-wire.md §1.
    func startRelays() async throws {
        let account = try signedIn()
        let me = account.keys.publicKey
        resetRelayRun()
        let pageSize = configuration.historyPageSize
        // R12: only the first history this account takes in on this device counts as a restore.
        restoring = account.ledger.isEmpty && (try? account.store.value("restored")) == nil
        let subscriptions = [
            // After a lost connection the window reaches back over the time it was down.
            RelayPool.Subscription(id: Self.liveSubscription) { (context: SubscriptionRequestContext) in
                [
                    Filter(
                        kinds: [GiftWrap.wrapKind], tags: ["p": [me.hex]],
                        since: context.since(window: Self.wrapBackdating, now: UnixTime.now()), limit: pageSize)
                ]
            },
            RelayPool.Subscription(id: Self.followSubscription) { [Filter(authors: [me], kinds: [EventKind.followList], limit: 1)] },
            RelayPool.Subscription(id: Self.inboxSubscription) { [Filter(authors: [me], kinds: [EventKind.inboxRelays], limit: 1)] },
        ]
        let inbox = inbox
        // The account's inbox relays are read too, answering their AUTH with the account's key:
        // an inbox serves gift wraps only to their recipient.
        await pool.start(
            entries: account.relays, readers: account.inbox.relays, authKeys: account.keys, subscriptions: subscriptions,
            onEvent: { relay, subscription, event in inbox.yield(.relayEvent(relay: relay, subscription: subscription, event)) },
            onStatus: { statuses in inbox.yield(.relayStatuses(statuses)) })
    }

    /// Forgets everything one run of the relay connections built up (start, stop, logout).
    func resetRelayRun() {
        liveRelays = []
        historyUnsaved = false
        historyBuffers = [:]
        backfills = [:]
        historyWork = [:]
        everConnected = []
        profilesRequested = []
        recipientInboxes = [:]
    }

    func receive(_ event: SubscriptionEvent, relay: String, subscription: String) async {
        guard account != nil else { return }
        switch (subscription, event) {
        case (Self.followSubscription, .event(let followList)):
            applyFollowList(followList)
        case (Self.inboxSubscription, .event(let list)):
            if applyInboxList(list), let relays = account?.inbox.relays { await pool.setReaders(relays) }
        case (let id, .event(let metadata)) where id.hasPrefix(Self.profileSubscriptionPrefix):
            if self.account?.profiles.apply(metadata) == true {
                do { try saveProfiles() } catch { toast = "\(error)" }
            }
        case (let id, .endOfStoredEvents) where id.hasPrefix(Self.profileSubscriptionPrefix):
            await pool.unsubscribe(id, on: relay)
        case (Self.liveSubscription, .event(let wrap)):
            if liveRelays.contains(relay) {
                await ingest([wrap], origin: .live)
            } else {
                historyBuffers[relay, default: []].append(wrap)
            }
        case (Self.liveSubscription, .endOfStoredEvents):
            guard !liveRelays.contains(relay) else { return }
            // From here on this relay's events are live; its history is worked off in steps.
            liveRelays.insert(relay)
            let history = historyBuffers.removeValue(forKey: relay) ?? []
            // The subscription's `since` was taken at subscribe time, before now: the stored events
            // reach at least as far back as the window start (a later bound only means a second
            // asked for twice).
            startHistory(
                history, relay: relay,
                then: .firstPage(
                    HistoryPager(
                        limit: configuration.historyPageSize,
                        maxLimit: configuration.maxHistoryPageSize,
                        floor: restoring ? nil : historyFloor(relay),
                        windowStart: UnixTime.now() - Self.wrapBackdating)))
        case (let id, .event(let wrap)) where backfills[relay]?.subscriptionID == id:
            backfills[relay]?.events.append(wrap)
        case (let id, .closed(let reason)) where backfills[relay]?.subscriptionID == id:
            // The relay refused or ended the page (a subscription limit, a slow query): paging on
            // this relay ends for this run, without a floor, so the next run asks again.
            backfills[relay] = nil
            logger.notice("relay closed a history page", metadata: ["relay.url": "\(relay)", "relay.reason": Self.logValue(reason)])
            await pool.unsubscribe(id, on: relay)
        case (let id, .endOfStoredEvents) where backfills[relay]?.subscriptionID == id:
            guard let backfill = backfills.removeValue(forKey: relay) else { return }
            // The page's work is queued before the await below: the actor is re-entered there, and
            // with neither a backfill nor history work the relay would read as complete for a moment.
            startHistory(backfill.events, relay: relay, then: .nextPage(backfill.pager))
            await pool.unsubscribe(id, on: relay)
        default:
            break
        }
    }

    static let profileSubscriptionPrefix = "linkstr-profiles-"
    static let notificationsKept = 200

    /// Asks for the kind-0 metadata of everyone we show (contacts and every session member),
    /// once per relay sync and when a contact is added; the answers update the names.
    func requestProfiles(on relay: String? = nil, onlyNew: Bool = false) async {
        guard let account else { return }
        var people = Set(account.contacts.follows)
        for session in account.ledger.sessions.values { people.formUnion(session.membership.everKnown) }
        people.remove(account.me)
        if onlyNew { people.subtract(profilesRequested) }
        let authors = people.sorted().prefix(500).compactMap { try? PublicKey(hex: $0) }
        guard !authors.isEmpty else { return }
        profilesRequested.formUnion(authors.map(\.hex))
        backfillCounter += 1
        let id = "\(Self.profileSubscriptionPrefix)\(backfillCounter)"
        await pool.subscribe(RelayPool.Subscription(id: id) { [Filter(authors: Array(authors), kinds: [EventKind.metadata])] }, on: relay)
    }

    /// Asks `relay` for the page of our gift wraps at or before `until`, taking over from the
    /// finished page's history work in one step (no await between): the actor is re-entered at
    /// every await, and with neither a backfill nor history work the relay would read as
    /// complete for a moment.
    private func requestBackfill(relay: String, until: Int64, pager: HistoryPager) async {
        historyWork[relay] = nil
        guard let me = account?.keys.publicKey else { return }
        backfillCounter += 1
        let id = "linkstr-backfill-\(backfillCounter)"
        backfills[relay] = Backfill(subscriptionID: id, pager: pager)
        let limit = pager.limit
        await pool.subscribe(
            RelayPool.Subscription(id: id) {
                [Filter(kinds: [GiftWrap.wrapKind], tags: ["p": [me.hex]], until: until, limit: limit)]
            }, on: relay)
    }

    /// Below this `created_at` the device already has `relay`'s history from an earlier run: the
    /// live window's start in the last run whose paging on that relay completed, less a margin. A
    /// wrap published since then is backdated at most two days from its publication, which that
    /// run's live subscription (while connected) or the next run's paging (down to here) covers;
    /// the margin (`historyFloorMargin`) covers a sender's clock running behind and a wrap
    /// published a while after it was made. A floor above the current window's start (the
    /// clock went back) is no floor.
    package func historyFloor(_ relay: String) -> Int64? {
        guard let floor = historyFloors()[relay], floor <= UnixTime.now() - Self.wrapBackdating else { return nil }
        return floor
    }

    package static let historyFloorMargin: Int64 = 6 * 3600

    /// Per relay URL, sealed in one account value like the relay list (a key per relay would
    /// show the URLs in clear). Unreadable reads as none: every relay pages to the beginning.
    private func historyFloors() -> [String: Int64] {
        (try? account?.store.decoded([String: Int64].self, for: Self.historyFloorsKey)) ?? [:]
    }

    private func saveHistoryFloor(_ windowStart: Int64, relay: String) {
        var floors = historyFloors()
        // Relays no longer on the account drop out.
        let current = Set(account?.relays.map(\.url) ?? [])
        floors = floors.filter { current.contains($0.key) }
        floors[relay] = windowStart - Self.historyFloorMargin
        do { try account?.store.setEncoded(floors, for: Self.historyFloorsKey) } catch { toast = "\(error)" }
    }

    static let historyFloorsKey = "history_floors"

    /// True while some relay is still paging history.
    public var isBackfilling: Bool { !backfills.isEmpty || !historyWork.isEmpty }

    /// Queues a page of history for `relay`, worked off by `historyStep` jobs.
    private func startHistory(_ wraps: [NostrEvent], relay: String, then next: HistoryWork.Next) {
        let oldest = wraps.map(\.createdAt).min(), newest = wraps.map(\.createdAt).max()
        historyWork[relay] = HistoryWork(
            wraps: wraps[...], origin: restoring ? .restore : .history, count: wraps.count, oldest: oldest,
            newest: newest, next: next)
        inbox.yield(.historyStep(relay: relay))
    }

    /// One step of a relay's history page: open the next chunk of wraps, or (all opened) apply the
    /// next chunk of messages in the order rule's order (R14). Each step ends by queueing the
    /// next, behind whatever arrived meanwhile, so an action the user takes never waits for a
    /// whole restore.
    func historyStep(relay: String) async {
        guard var work = historyWork[relay], let account else { return }
        let chunk = max(1, configuration.historyStepSize)
        if !work.wraps.isEmpty {
            let next = work.wraps.prefix(chunk)
            work.wraps = work.wraps.dropFirst(chunk)
            guard let opened = await open(Array(next), for: account) else { return }
            work.messages += opened
            if work.wraps.isEmpty { work.messages.sort { EventOrder($0) < EventOrder($1) } }
            historyWork[relay] = work
            inbox.yield(.historyStep(relay: relay))
            return
        }
        if work.applied < work.messages.count {
            configuration.willApplyHistoryStep?(work.applied, work.messages.count)
            let end = min(work.applied + chunk, work.messages.count)
            apply(Array(work.messages[work.applied..<end]), origin: work.origin)
            work.applied = end
            historyWork[relay] = work
            inbox.yield(.historyStep(relay: relay))
            return
        }
        var pager: HistoryPager
        var firstPage = false
        switch work.next {
        case .firstPage(let first):
            pager = first
            firstPage = true
            if restoring {
                do { try self.account?.store.setValue("1", for: "restored") } catch { toast = "\(error)" }
            }
        case .nextPage(let current):
            pager = current
        }
        // Page backwards from the oldest event; below the live window there may be more whatever
        // the first page held, down to the relay's floor.
        let until: Int64? =
            if firstPage {
                pager.next(afterLivePageOf: work.count, oldest: work.oldest, newest: work.newest)
            } else if let oldest = work.oldest, let newest = work.newest {
                pager.next(afterPageOf: work.count, oldest: oldest, newest: newest)
            } else {
                nil
            }
        if let until {
            await requestBackfill(relay: relay, until: until, pager: pager)
        } else {
            historyWork[relay] = nil
            // Only history that is all on disk moves the floor: a run whose saves failed pages
            // the same range again next time.
            if !historyUnsaved, let windowStart = pager.windowStart { saveHistoryFloor(windowStart, relay: relay) }
        }
        if firstPage { await requestProfiles(on: relay) }
    }

    /// Opens live `wraps` (on every core) and applies them.
    func ingest(_ wraps: [NostrEvent], origin: IngestOrigin) async {
        guard let account, let messages = await open(wraps, for: account), !messages.isEmpty else { return }
        apply(messages, origin: origin)
        await requestProfiles(onlyNew: true)
    }

    /// Opens the wraps `account` has not seen yet, on every core; the ones that fail a check are
    /// dropped (and logged). Nil when the signed-in account changed while they were being opened.
    private func open(_ wraps: [NostrEvent], for account: Account) async -> [LinkstrMessage]? {
        let unseen = wraps.filter { !account.ledger.hasSeen(wrapID: $0.id.hex) }
        guard !unseen.isEmpty else { return [] }
        var messages: [LinkstrMessage] = []
        messages.reserveCapacity(unseen.count)
        for result in await WrapOpener(keys: account.keys, cache: cache).open(unseen) {
            switch result {
            case .success(let message): messages.append(message)
            // The reason can quote the sender's payload (an unknown kind): escaped like relay text.
            case .failure(let error): logger.debug("dropped a wrap", metadata: ["reason": Self.logValue(error)])
            }
        }
        guard self.account?.me == account.me else { return nil }
        return messages
    }

    /// Applies opened messages in one batch and saves the changes in one transaction.
    private func apply(_ messages: [LinkstrMessage], origin: IngestOrigin) {
        guard var ledger = account?.ledger, let account else { return }
        for report in ledger.ingest(batch: messages, origin: origin) {
            for applied in report.applied where NotificationDecision.notifies(applied, me: account.me, archived: account.archived) {
                notifications.append(applied)
                // The newest ones only: the app shows them and moves on; a long run must not grow.
                if notifications.count > Self.notificationsKept { notifications.removeFirst(notifications.count - Self.notificationsKept) }
            }
        }
        self.account?.ledger = ledger
        do {
            try saveLedger()
        } catch {
            toast = "\(error)"
            historyUnsaved = true
        }
    }

    /// Whether `event` replaced the account's inbox list.
    private func applyInboxList(_ event: NostrEvent) -> Bool {
        guard let account, event.kind == EventKind.inboxRelays, event.pubkey == account.keys.publicKey, event.isValid else {
            return false
        }
        guard self.account?.inbox.apply(list: event) == true else { return false }
        do { try saveInbox() } catch { toast = "\(error)" }
        return true
    }

    private func applyFollowList(_ event: NostrEvent) {
        guard let account, event.kind == EventKind.followList, event.pubkey == account.keys.publicKey, event.isValid else { return }
        guard self.account?.contacts.apply(followList: event) == true else { return }
        do { try saveContacts() } catch { toast = "\(error)" }
    }
}

extension LinkstrAppCore {
    /// True once every enabled relay has delivered its history (EOSE) or failed: what a one-shot
    /// client (the CLI's `sync`) waits for before reading state.
    public var historyComplete: Bool {
        guard let account else { return true }
        return account.relays.filter(\.enabled).allSatisfy { entry in
            if liveRelays.contains(entry.url) { return backfills[entry.url] == nil && historyWork[entry.url] == nil }
            if case .failed = relayStatuses[entry.url] { return true }
            return false
        }
    }
}
