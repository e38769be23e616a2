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

    /// A full lane makes only its own producers wait: the other lane's go straight in.
    @Test(.timeLimit(.minutes(1))) func aFullLaneHoldsUpOnlyItsOwnProducers() async {
        let batcher = Batcher<Int>(limit: 2, lanes: 2)
        #expect(await batcher.send(100, lane: 1))
        #expect(await batcher.send(101, lane: 1))
        let waiting = Task { await batcher.send(102, lane: 1) }
        #expect(await eventually { batcher.waitingSenders == 1 }, "lane 1 is full")
        #expect(await batcher.send(1, lane: 0), "lane 0 has its own room")
        #expect(await batcher.send(2, lane: 0))
        #expect(batcher.count == 4)
        #expect(await batcher.next(max: 8) == [1, 2, 100, 101])
        #expect(await waiting.value, "taken in once the batch made room")
        #expect(await batcher.next(max: 8) == [102])
    }

    /// A batch takes lane 0 first, but keeps a quarter of itself for lane 1 while lane 1 has
    /// items, so a busy lane 0 cannot starve it; unused room goes to whichever lane has items.
    @Test func lane0ComesFirstAndLane1KeepsAQuarterOfEachBatch() async {
        let batcher = Batcher<Int>(lanes: 2)
        for value in 1...20 { batcher.add(value) }
        for value in 101...120 { #expect(await batcher.send(value, lane: 1)) }
        #expect(await batcher.next(max: 8) == [1, 2, 3, 4, 5, 6, 101, 102], "6 from lane 0, a quarter (2) from lane 1")
        #expect(await batcher.next(max: 8) == [7, 8, 9, 10, 11, 12, 103, 104])
        #expect(await batcher.next(max: 16) == [13, 14, 15, 16, 17, 18, 19, 20, 105, 106, 107, 108, 109, 110, 111, 112], "lane 0 drained")
        #expect(await batcher.next(max: 16) == Array(113...120), "lane 1 alone takes the whole batch")

        // Lane 1 alone with a little: one item is still kept for it in a batch of three.
        let small = Batcher<Int>(lanes: 2)
        for value in 1...5 { small.add(value) }
        #expect(await small.send(9, lane: 1))
        #expect(await small.next(max: 3) == [1, 2, 9])
        #expect(await small.next(max: 3) == [3, 4, 5])
    }

    /// A lane far behind its writer gives up a batch at a time, in order, while items keep
    /// arriving behind the ones taken (the lane drops what was taken in bulk, not per batch).
    @Test func aLaneFarBehindGivesUpABatchAtATimeInOrder() async {
        let batcher = Batcher<Int>(lanes: 2)
        for value in 0..<1_000 { batcher.add(value) }
        for value in 10_000..<10_100 { #expect(await batcher.send(value, lane: 1)) }
        var taken: [Int] = []
        var next = 1_000
        while let batch = await batcher.next(max: 16) {
            #expect(batch.count <= 16)
            let fromLane1 = batch.filter { $0 >= 10_000 }
            // A quarter of each batch stays with lane 1 while it has items.
            if taken.filter({ $0 >= 10_000 }).count < 100 { #expect(fromLane1.count == min(4, 100 - taken.filter { $0 >= 10_000 }.count)) }
            taken += batch
            // New items behind the taken ones, until 1,500 went into lane 0.
            if next < 1_500 {
                for value in next..<(next + 5) { batcher.add(value) }
                next += 5
            }
            if batcher.count == 0 { batcher.close() }
        }
        #expect(taken.filter { $0 < 10_000 } == Array(0..<1_500), "lane 0 in order, each item once")
        #expect(taken.filter { $0 >= 10_000 } == Array(10_000..<10_100), "lane 1 in order, each item once")
    }
}
