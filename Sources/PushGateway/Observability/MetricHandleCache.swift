import NostrProtocol

/// Metric handles kept by their label values, so that a label set is looked up in the
/// registry once rather than on every count. `Counter(label:dimensions:)` in swift-prometheus
/// checks the name and every label, takes the registry's lock and, for a histogram, compares its
/// 13 buckets each time; the gateway counts every push and every request, thousands a second.
///
/// The label values come from bounded sets (outcomes, push-service reasons, status codes, route
/// templates), and the cache stops taking new ones at `capacity`: past it a handle is made as
/// before, uncached, so a surprise in a label's values costs speed, never memory here.
package final class MetricHandleCache<Key: Hashable & Sendable, Handle: Sendable>: Sendable {
    private let handles = Locked<[Key: Handle]>([:])
    package let capacity: Int

    package init(capacity: Int = 512) { self.capacity = capacity }

    /// The handle for `key`, made by `make` the first time.
    package func handle(_ key: Key, make: () -> Handle) -> Handle {
        if let known = handles.withLock({ $0[key] }) { return known }
        let made = make()
        handles.withLock { cached in
            if cached.count < capacity, cached[key] == nil { cached[key] = made }
        }
        return made
    }

    package var count: Int { handles.withLock { $0.count } }
}
