package import NIOCore

/// The answers to one connection's share of a delivery round, gathered on that connection's
/// event loop and handed to the waiting caller together, by one promise. A promise per request,
/// gathered by `EventLoopFuture.whenAllComplete`, cost each push a future, its callbacks and the
/// gathering's own bookkeeping: about 7,000 instructions a push on the send path
/// (`scripts/bench-send-instructions.sh`).
///
/// Only the connection's event loop touches it: the pool creates it there, or before any other
/// thread can see it, and the stream handler and the write's failure callback answer on that
/// loop. That confinement (asserted in debug builds; the pool's round sets `cut` in the same
/// `execute` that writes the requests) is why it may be `@unchecked Sendable`.
package final class HTTP2RoundAnswers: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private var answers: [Result<HTTP2Response, any Error>?]
    private var unanswered: Int
    private let promise: EventLoopPromise<[Result<HTTP2Response, any Error>]>
    /// The round's deadline timer, cancelled with the last answer.
    package var cut: Scheduled<Void>?

    package init(count: Int, on eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        answers = Array(repeating: nil, count: count)
        unanswered = count
        promise = eventLoop.makePromise()
        if count == 0 { promise.succeed([]) }
    }

    /// Every answer, in the order of the requests, once the last has come.
    package var futureResult: EventLoopFuture<[Result<HTTP2Response, any Error>]> { promise.futureResult }

    /// The answer to request `index`; a second answer to the same request is ignored (the first
    /// stands, as with a promise).
    package func answer(_ index: Int, with result: Result<HTTP2Response, any Error>) {
        eventLoop.assertInEventLoop()
        guard answers.indices.contains(index), answers[index] == nil else { return }
        answers[index] = result
        unanswered -= 1
        guard unanswered == 0 else { return }
        cut?.cancel()
        cut = nil
        promise.succeed(answers.map { $0 ?? .failure(HTTP2ConnectionError.closed) })
    }

    /// Every request not answered yet fails with `error`.
    package func failUnanswered(_ error: any Error) {
        eventLoop.assertInEventLoop()
        for index in answers.indices where answers[index] == nil { answer(index, with: .failure(error)) }
    }
}
