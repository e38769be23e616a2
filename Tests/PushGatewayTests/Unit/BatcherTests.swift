import PushGateway
import TestSupport
import Testing

/// The batcher between producers (relay consumers) and a writer loop, as a value with no I/O.
struct BatcherTests {
    @Test func aWriterTakesWhatGatheredUpToItsBatchInOrder() async {
        let batcher = Batcher<Int>()
        for value in 1...5 { batcher.add(value) }
        #expect(batcher.count == 5)
        #expect(await batcher.next(max: 3) == [1, 2, 3])
        #expect(await batcher.next(max: 3) == [4, 5])
        #expect(batcher.count == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aWaitingWriterWakesOnTheNextItem() async {
        let batcher = Batcher<String>()
        async let batch = batcher.next(max: 10)
        // Let the writer reach its wait before anything arrives.
        try? await Task.sleep(for: .milliseconds(50))
        batcher.add("eose")
        #expect(await batch == ["eose"])
    }

    @Test func closingDrainsWhatIsLeftThenEnds() async {
        let batcher = Batcher<Int>()
        batcher.add(7)
        batcher.close()
        #expect(await batcher.next(max: 10) == [7], "added before the close: still written")
        #expect(await batcher.next(max: 10) == nil)
    }

    @Test(.timeLimit(.minutes(1))) func closingWakesAWaitingWriter() async {
        let batcher = Batcher<Int>()
        async let batch = batcher.next(max: 10)
        try? await Task.sleep(for: .milliseconds(50))
        batcher.close()
        #expect(await batch == nil)
    }

    @Test(.timeLimit(.minutes(1))) func aSenderWaitsWhileTheLimitIsPendingAndGoesOnWhenABatchIsTaken() async {
        let batcher = Batcher<Int>(limit: 3)
        for value in 1...3 { #expect(await batcher.send(value)) }
        let fourth = Task { await batcher.send(4) }
        #expect(await eventually { batcher.waitingSenders == 1 }, "the fourth waits")
        #expect(batcher.count == 3)
        #expect(await batcher.next(max: 2) == [1, 2])
        #expect(await fourth.value, "taken in once the batch made room")
        #expect(await batcher.next(max: 10) == [3, 4], "in order")
    }

    @Test(.timeLimit(.minutes(1))) func closingTurnsWaitingSendersAway() async {
        let batcher = Batcher<Int>(limit: 1)
        #expect(await batcher.send(1))
        let second = Task { await batcher.send(2) }
        #expect(await eventually { batcher.waitingSenders == 1 })
        batcher.close()
        #expect(await second.value == false, "not added: the writer is gone")
        #expect(await batcher.send(3) == false)
        #expect(await batcher.next(max: 10) == [1])
        #expect(await batcher.next(max: 10) == nil)
    }

    @Test func addIgnoresTheLimit() async {
        let batcher = Batcher<Int>(limit: 1)
        for value in 1...3 { batcher.add(value) }
        #expect(await batcher.next(max: 10) == [1, 2, 3])
    }
}
