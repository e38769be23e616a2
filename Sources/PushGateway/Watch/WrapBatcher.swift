/// Sightings waiting to be recorded. Relay consumers add one at a time; ingest loops take what
/// has gathered (up to a batch) in one go, so a burst costs one statement per batch, not per wrap.
actor WrapBatcher {
    private var pending: [WrapSighting] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var closed = false

    func add(_ sighting: WrapSighting) {
        pending.append(sighting)
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }

    /// The next batch; nil once closed and drained.
    func next(max: Int) async -> [WrapSighting]? {
        while pending.isEmpty {
            if closed { return nil }
            await withCheckedContinuation { waiters.append($0) }
        }
        let batch = Array(pending.prefix(max))
        pending.removeFirst(batch.count)
        return batch
    }

    /// No more sightings will come; waiting loops drain what is left, then end.
    func close() {
        closed = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }

    var count: Int { pending.count }
}
