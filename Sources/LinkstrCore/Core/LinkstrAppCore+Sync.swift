import Foundation
import NostrProtocol
import NostrRelay

extension LinkstrAppCore {
    static let liveSubscription = "linkstr-live"
    static let followSubscription = "linkstr-follows"
    /// Gift wraps are backdated up to two days (NIP-59), so a live subscription looks that far back.
    static let wrapBackdating: Int64 = 172_800

    /// Builds the relay connections from scratch (a foreground start behaves like a cold open)
    /// with the live and follow-list subscriptions of linkstr-wire.md §1.
    func startRelays() async throws {
        let account = try signedIn()
        let me = account.keys.publicKey
        liveRelays = []
        historyBuffers = [:]
        backfills = [:]
        everConnected = []
        let pageSize = configuration.historyPageSize
        // R12: only the first history this account takes in on this device counts as a restore.
        restoring = account.ledger.isEmpty && (try? account.store.value("restored")) == nil
        let subscriptions = [
            RelayPool.Subscription(id: Self.liveSubscription) {
                [Filter(kinds: [GiftWrap.wrapKind], tags: ["p": [me.hex]], since: UnixTime.now() - Self.wrapBackdating, limit: pageSize)]
            },
            RelayPool.Subscription(id: Self.followSubscription) { [Filter(authors: [me], kinds: [EventKind.followList], limit: 1)] },
        ]
        let inbox = inbox
        await pool.start(
            entries: account.relays, subscriptions: subscriptions,
            onEvent: { relay, subscription, event in inbox.yield(.relayEvent(relay: relay, subscription: subscription, event)) },
            onStatus: { statuses in inbox.yield(.relayStatuses(statuses)) })
    }

    func receive(_ event: SubscriptionEvent, relay: String, subscription: String) async {
        guard account != nil else { return }
        switch (subscription, event) {
        case (Self.followSubscription, .event(let followList)):
            applyFollowList(followList)
        case (Self.liveSubscription, .event(let wrap)):
            if liveRelays.contains(relay) {
                await ingest([wrap], origin: .live)
            } else {
                historyBuffers[relay, default: []].append(wrap)
            }
        case (Self.liveSubscription, .endOfStoredEvents):
            guard !liveRelays.contains(relay) else { return }
            // Marked live only after the paging decision: `historyComplete` may be read while
            // this job waits for the wraps to open.
            defer { liveRelays.insert(relay) }
            let history = historyBuffers.removeValue(forKey: relay) ?? []
            await ingest(history, origin: restoring ? .restore : .history)
            if restoring {
                do { try self.account?.store.setValue("1", for: "restored") } catch { toast = "\(error)" }
            }
            // A full first page means there is more: page backwards from its oldest event.
            var pager = HistoryPager(limit: configuration.historyPageSize, maxLimit: configuration.maxHistoryPageSize)
            if let oldest = history.map(\.createdAt).min(), let newest = history.map(\.createdAt).max(),
               let until = pager.next(afterPageOf: history.count, oldest: oldest, newest: newest) {
                await requestBackfill(relay: relay, until: until, pager: pager)
            }
        case (let id, .event(let wrap)) where backfills[relay]?.subscriptionID == id:
            backfills[relay]?.events.append(wrap)
        case (let id, .endOfStoredEvents) where backfills[relay]?.subscriptionID == id:
            guard var backfill = backfills[relay] else { return }
            await pool.unsubscribe(id, on: relay)
            await ingest(backfill.events, origin: restoring ? .restore : .history)
            backfills[relay] = nil
            if let oldest = backfill.events.map(\.createdAt).min(), let newest = backfill.events.map(\.createdAt).max(),
               let until = backfill.pager.next(afterPageOf: backfill.events.count, oldest: oldest, newest: newest) {
                await requestBackfill(relay: relay, until: until, pager: backfill.pager)
            }
        default:
            break
        }
    }

    /// Asks `relay` for the page of our gift wraps at or before `until`.
    private func requestBackfill(relay: String, until: Int64, pager: HistoryPager) async {
        guard let me = account?.keys.publicKey else { return }
        backfillCounter += 1
        let id = "linkstr-backfill-\(backfillCounter)"
        backfills[relay] = Backfill(subscriptionID: id, pager: pager)
        let limit = pager.limit
        await pool.subscribe(RelayPool.Subscription(id: id) {
            [Filter(kinds: [GiftWrap.wrapKind], tags: ["p": [me.hex]], until: until, limit: limit)]
        }, on: relay)
    }

    /// True while some relay is still paging history.
    public var isBackfilling: Bool { !backfills.isEmpty }

    /// Opens `wraps` (on every core), applies them in one batch (history in the order rule's
    /// order, R14) and saves the changes in one transaction.
    func ingest(_ wraps: [NostrEvent], origin: IngestOrigin) async {
        guard let account else { return }
        let unseen = wraps.filter { !account.ledger.hasSeen(wrapID: $0.id.hex) }
        guard !unseen.isEmpty else { return }
        let opened = await WrapOpener(keys: account.keys, cache: cache).open(unseen)
        var messages: [LinkstrMessage] = []
        messages.reserveCapacity(opened.count)
        for result in opened {
            switch result {
            case .success(let message): messages.append(message)
            case .failure(let error): logger.debug("dropped a wrap", metadata: ["reason": "\(error)"])
            }
        }
        // The account may have changed while the wraps were being opened.
        guard var ledger = self.account?.ledger, self.account?.me == account.me else { return }
        for report in ledger.ingest(batch: messages, origin: origin) {
            for applied in report.applied where NotificationDecision.notifies(applied, me: account.me, archived: account.archived) {
                notifications.append(applied)
            }
        }
        self.account?.ledger = ledger
        do { try saveLedger() } catch { toast = "\(error)" }
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
            if liveRelays.contains(entry.url) { return backfills[entry.url] == nil }
            if case .failed = relayStatuses[entry.url] { return true }
            return false
        }
    }
}
