/// Stand-ins for NostrProtocol's `EventID` (a non-trivial value: an array) and NostrRelay's
/// connection (an async throwing call in another module).
public struct EventID: Sendable, Hashable {
    public let bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }
}

public struct Event: Sendable {
    public let id: EventID
    public init(id: EventID) { self.id = id }
}

public final class Connection: Sendable {
    public init() {}
    public func publish(_ event: Event) async throws -> Bool { !event.id.bytes.isEmpty }
}
