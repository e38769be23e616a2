public import NostrProtocol

/// A relay's `OK` for a published event.
public struct PublishResult: Sendable, Equatable {
    public var eventID: EventID
    public var accepted: Bool
    public var message: String

    public init(eventID: EventID, accepted: Bool, message: String) {
        self.eventID = eventID
        self.accepted = accepted
        self.message = message
    }

    /// NIP-01's machine-readable prefix (`duplicate:`, `blocked:`, …), when there is one.
    public var prefix: MachineReadablePrefix? { RelayMessage.prefix(of: message) }
}
