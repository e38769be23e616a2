/// How the delivery workers drain the queue.
public struct DeliverySettings: Sendable, Equatable {
    /// `DELIVERY_LEASE_SECONDS` (default 30): how long a claimed job is reserved for the worker
    /// that claimed it. A worker that dies mid-send (kill -9) delays its jobs by at most this much.
    public var leaseSeconds: Int
    /// `DELIVERY_BATCH_SIZE` (default 128): jobs claimed per round and sent concurrently.
    public var batchSize: Int
    /// `DELIVERY_LOOPS` (default 4): claim-and-send loops per instance, so one slow round does not
    /// stall the queue.
    public var loops: Int
    /// `DELIVERY_DIRECT_LIMIT` (default 1024, 0 turns it off): jobs (relay watch, `POST /v1/push`) this instance
    /// queues already claimed and sends at once, at most this many in flight (`DirectDelivery`);
    /// beyond it new jobs wait in the queue for the loops.
    public var directLimit: Int

    public init(leaseSeconds: Int = 30, batchSize: Int = 128, loops: Int = 4, directLimit: Int = 1024) {
        self.leaseSeconds = leaseSeconds
        self.batchSize = batchSize
        self.loops = loops
        self.directLimit = directLimit
    }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> DeliverySettings {
        let defaults = DeliverySettings()
        return DeliverySettings(
            leaseSeconds: try ConfigurationError.integer(env, "DELIVERY_LEASE_SECONDS", 1...3600, default: defaults.leaseSeconds),
            batchSize: try ConfigurationError.integer(env, "DELIVERY_BATCH_SIZE", 1...1000, default: defaults.batchSize),
            loops: try ConfigurationError.integer(env, "DELIVERY_LOOPS", 1...64, default: defaults.loops),
            directLimit: try ConfigurationError.integer(env, "DELIVERY_DIRECT_LIMIT", 0...1_000_000, default: defaults.directLimit))
    }
}
