/// One subscription's items, in the order the relay sent them (`RelayConnection.subscribe`).
///
/// Bounded, unlike an `AsyncStream`: the connection holds at most
/// `RelayConfiguration.inboundBufferBytes` of relay messages for all its subscriptions together,
/// and while that is full it stops reading the relay's socket until consumers catch up. So a
/// consumer that is slower than its relay slows the relay down instead of filling memory; a
/// consumer must keep reading (or let go of the stream, or cancel its task) for the connection's
/// other subscriptions, and its `OK`s, to move on.
///
/// One consumer at a time. The stream ends after `unsubscribe`, when the connection stops, when
/// the iterating task is cancelled, or when every copy of the stream and its iterator is gone.
public struct SubscriptionStream: AsyncSequence, Sendable {
    public typealias Element = SubscriptionEvent
    public typealias Failure = Never

    private let handle: Handle

    package init(buffer: SubscriptionBuffer<SubscriptionEvent>) {
        handle = Handle(buffer: buffer)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = SubscriptionEvent
        public typealias Failure = Never

        fileprivate let handle: Handle

        public mutating func next() async -> SubscriptionEvent? {
            await handle.buffer.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: handle)
    }

    /// Ends the subscription's queue once nobody can read it any more, so its items stop taking
    /// the connection's budget (the reader would otherwise wait for a consumer that never comes).
    fileprivate final class Handle: Sendable {
        let buffer: SubscriptionBuffer<SubscriptionEvent>

        init(buffer: SubscriptionBuffer<SubscriptionEvent>) {
            self.buffer = buffer
        }

        deinit { buffer.terminate() }
    }
}
