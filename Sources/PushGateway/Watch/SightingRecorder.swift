/// Records gift-wrap sightings and hands their pushes on: the claim and the queued jobs in one
/// statement (`WatchStore.record`), the jobs it leased to direct delivery, the rest to the
/// delivery loops' wake-up, and the counts to the metrics. The relay watcher's ingest loop and the
/// inbox relay both record through it, so a wrap is claimed, coalesced and budgeted one way.
package struct SightingRecorder: Sendable {
    let store: WatchStore
    let metrics: GatewayMetrics
    let wakeup: WakeupSignal?
    /// Sends the jobs this instance just queued and leased itself; nil when it does not deliver.
    let directDelivery: DirectDelivery?

    package init(store: WatchStore, metrics: GatewayMetrics, wakeup: WakeupSignal?, directDelivery: DirectDelivery?) {
        self.store = store
        self.metrics = metrics
        self.wakeup = wakeup
        self.directDelivery = directDelivery
    }

    /// Records `sightings`; nothing of them is committed when it throws.
    @discardableResult
    package func record(_ sightings: [WrapSighting]) async throws -> WatchStore.RecordResult {
        let result = try await store.record(sightings, leaseSeconds: directDelivery?.lease())
        handOn(result, distinctWraps: Set(sightings.map(\.wrapID)).count)
        return result
    }

    /// What another statement recorded (`InboxStore.store(_:pushing:)`) of `distinctWraps` wraps:
    /// the leased jobs sent, the rest woken for, the counts to the metrics.
    func handOn(_ result: WatchStore.RecordResult, distinctWraps: Int) {
        // Not awaited: the next batch is recorded while this one is sent.
        directDelivery?.start(result.leased)
        metrics.watchRecorded(duplicates: distinctWraps - result.claimed, queued: result.jobs, coalesced: result.merged)
        if result.overBudget > 0 { metrics.push(outcome: "over_budget", reason: nil, count: result.overBudget) }
        // Jobs due now that could not be leased (direct delivery at its limit) are the loops'
        // at once. Those that wait for a window are found by the loops' poll when due: waking
        // every loop for them cost two empty claims a loop each time.
        if result.jobs > result.leased.count, !result.leasedDue { wakeup?.signal() }
    }

    /// How another statement should queue pushes to record as this recorder does, for sightings
    /// from `relay`.
    func pushing(from relay: String) -> StoreInboxWrapsStatement.Pushing {
        StoreInboxWrapsStatement.Pushing(
            relay: relay, coalesceSeconds: store.settings.coalesceSeconds, lifetimeSeconds: GatewayStore.jobLifetimeSeconds,
            leaseSeconds: directDelivery?.lease(), budget: store.deviceBudget)
    }
}
