/// What the delivery queue holds, as the gauges and the operator's console show it.
public struct QueueDepth: Sendable, Equatable {
    /// Jobs in the queue: exact up to `DeliveryQueue.exactCountCap`, PostgreSQL's estimate past it.
    public var queued: Int
    /// Jobs due now, up to `DeliveryQueue.exactCountCap`.
    public var due: Int
    /// Seconds since the oldest job still in the queue was queued; 0 when the queue is empty.
    public var oldestJobAgeSeconds: Double

    public init(queued: Int, due: Int, oldestJobAgeSeconds: Double) {
        self.queued = queued
        self.due = due
        self.oldestJobAgeSeconds = oldestJobAgeSeconds
    }
}
