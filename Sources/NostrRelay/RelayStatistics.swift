/// Counters for one connection, for metrics and `/admin/status`.
public struct RelayStatistics: Sendable, Equatable {
    public var connections = 0
    public var failures = 0
    public var events = 0
    public var notices = 0
    public var closed = 0
    public var invalidMessages = 0
    public var droppedOutbound = 0

    public init() {}
}
