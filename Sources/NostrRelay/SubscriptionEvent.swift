public import NostrProtocol

/// What a subscription yields. Subscriptions survive reconnects: after each (re)connect the REQ
/// is sent again, so `endOfStoredEvents` arrives once per connection.
public enum SubscriptionEvent: Sendable, Equatable {
    /// An event as the relay sent it: decoded, not yet verified (the consumer decides what
    /// verification costs it can afford, and counts failures).
    case event(NostrEvent)
    /// EOSE: what follows is live.
    case endOfStoredEvents
    /// The relay closed the subscription (`CLOSED`), with its message.
    case closed(String)
}
