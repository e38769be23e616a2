public import NostrProtocol
public import NostrRelay

/// The answers to one publish, counted as they arrive: which events some relay accepted, how
/// many sends are still out, and the last refusal (for the error). A publish is settled once every
/// event was accepted somewhere or every send has answered; the sends still out after that finish
/// in the background.
public struct PublishTally: Sendable {
    public let events: Set<EventID>
    public private(set) var accepted: Set<EventID> = []
    public private(set) var outstanding: Int
    public private(set) var lastRefusal = "no answer"

    public init(events: Set<EventID>, sends: Int) {
        self.events = events
        self.outstanding = sends
    }

    /// Every event was accepted by at least one relay (linkstr's send gating).
    public var succeeded: Bool { accepted.count == events.count }
    public var settled: Bool { succeeded || outstanding == 0 }

    public mutating func count(_ event: EventID, _ answer: Result<PublishResult, any Error>) {
        outstanding -= 1
        switch answer {
        case .success(let result) where result.accepted: accepted.insert(event)
        case .success(let result): lastRefusal = result.message
        case .failure(let error): lastRefusal = "\(error)"
        }
    }
}
