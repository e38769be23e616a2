import NIOCore
import NIOPosix
import PushGateway
import Testing

/// The answers to a round's requests, gathered on the connection's event loop: every request
/// answered once, in the requests' order whatever the order of the answers.
@Suite struct HTTP2RoundAnswersTests {
    struct Refused: Error, Equatable {}

    /// Whether a future has completed, read on its event loop.
    private final class Completion: @unchecked Sendable {
        var done = false
        init<Value>(of future: EventLoopFuture<Value>) { future.whenComplete { _ in self.done = true } }
    }

    private static func response(_ status: Int) -> HTTP2Response { HTTP2Response(status: status, body: ByteBuffer()) }

    private static func statuses(_ results: [Result<HTTP2Response, any Error>]) -> [Int?] {
        results.map { try? $0.get().status }
    }

    @Test func answersComeBackInTheRequestsOrderOnceTheLastArrives() async throws {
        let loop = NIOSingletons.posixEventLoopGroup.next()
        let answers = HTTP2RoundAnswers(count: 3, on: loop)
        let early = try await loop.submit {
            let completion = Completion(of: answers.futureResult)
            answers.answer(2, with: .success(Self.response(410)))
            answers.answer(0, with: .success(Self.response(200)))
            return completion.done
        }.get()
        #expect(!early, "two of three answers must not complete the round")
        try await loop.submit { answers.answer(1, with: .failure(Refused())) }.get()
        let results = try await answers.futureResult.get()
        #expect(Self.statuses(results) == [200, nil, 410])
        #expect(throws: Refused.self) { try results[1].get() }
    }

    @Test func aSecondAnswerToOneRequestIsIgnored() async throws {
        let loop = NIOSingletons.posixEventLoopGroup.next()
        let answers = HTTP2RoundAnswers(count: 2, on: loop)
        let early = try await loop.submit {
            let completion = Completion(of: answers.futureResult)
            answers.answer(0, with: .success(Self.response(200)))
            answers.answer(0, with: .success(Self.response(500)))
            // Out of range: ignored, not a crash.
            answers.answer(7, with: .success(Self.response(500)))
            answers.answer(-1, with: .success(Self.response(500)))
            return completion.done
        }.get()
        #expect(!early, "a repeated answer must not count as the other request's")
        try await loop.submit { answers.answer(1, with: .success(Self.response(429))) }.get()
        #expect(Self.statuses(try await answers.futureResult.get()) == [200, 429])
    }

    @Test func failingTheUnansweredKeepsTheAnswersAlreadyGiven() async throws {
        let loop = NIOSingletons.posixEventLoopGroup.next()
        let answers = HTTP2RoundAnswers(count: 3, on: loop)
        try await loop.submit {
            answers.answer(1, with: .success(Self.response(200)))
            answers.failUnanswered(Refused())
        }.get()
        let results = try await answers.futureResult.get()
        #expect(Self.statuses(results) == [nil, 200, nil])
        #expect(throws: Refused.self) { try results[0].get() }
        #expect(throws: Refused.self) { try results[2].get() }
    }

    @Test func theLastAnswerCancelsTheRoundsDeadlineTimer() async throws {
        let loop = NIOSingletons.posixEventLoopGroup.next()
        let answers = HTTP2RoundAnswers(count: 1, on: loop)
        let fired = try await loop.submit {
            let fired = loop.makePromise(of: Bool.self)
            answers.cut = loop.scheduleTask(in: .milliseconds(200)) { fired.succeed(true) }
            answers.cut?.futureResult.whenFailure { _ in fired.succeed(false) }
            answers.answer(0, with: .success(Self.response(200)))
            return fired.futureResult
        }.get().get()
        #expect(fired == false, "the timer must be cancelled, not run")
    }

    @Test func aRoundOfNoRequestsIsAnsweredAtOnce() async throws {
        let answers = HTTP2RoundAnswers(count: 0, on: NIOSingletons.posixEventLoopGroup.next())
        #expect(try await answers.futureResult.get().isEmpty)
    }
}
