import PushGateway
import Testing

/// Which changed chunks' REQs go out when, as a value with explicit instants.
struct ResubscribeScheduleTests {
    let start = ContinuousClock.now

    @Test func aChangeToAChunkNotSentLatelyGoesOutAtOnce() {
        var schedule = ResubscribeSchedule(interval: .seconds(2))
        schedule.note([3, 1])
        #expect(schedule.takeDue(at: start) == [1, 3])
        #expect(schedule.pending.isEmpty)
        #expect(schedule.nextDue(now: start) == nil)
    }

    @Test func aBurstWithinTheIntervalIsOneMoreREQ() {
        var schedule = ResubscribeSchedule(interval: .seconds(2))
        schedule.note([0])
        #expect(schedule.takeDue(at: start) == [0])
        // A thousand registrations into chunk 0 over the next 1.9 s: held, then sent once.
        for step in 1...1000 {
            schedule.note([0])
            #expect(schedule.takeDue(at: start + .microseconds(step * 1900)).isEmpty)
        }
        #expect(schedule.nextDue(now: start + .seconds(1)) == start + .seconds(2))
        #expect(schedule.takeDue(at: start + .seconds(2)) == [0])
        #expect(schedule.takeDue(at: start + .seconds(3)).isEmpty, "nothing changed since")
    }

    @Test func chunksAreDampedEachOnItsOwn() {
        var schedule = ResubscribeSchedule(interval: .seconds(2))
        schedule.note([0])
        #expect(schedule.takeDue(at: start) == [0])
        schedule.note([0, 1])
        #expect(schedule.takeDue(at: start + .milliseconds(500)) == [1], "chunk 1 was never sent")
        #expect(schedule.nextDue(now: start + .milliseconds(500)) == start + .seconds(2))
        schedule.note([1])
        #expect(schedule.takeDue(at: start + .seconds(2)) == [0])
        #expect(schedule.nextDue(now: start + .seconds(2)) == start + .milliseconds(2500))
        #expect(schedule.takeDue(at: start + .milliseconds(2500)) == [1])
    }

    @Test func aDueTimeInThePastIsNow() {
        var schedule = ResubscribeSchedule(interval: .seconds(2))
        schedule.note([5])
        _ = schedule.takeDue(at: start)
        schedule.note([5])
        #expect(schedule.nextDue(now: start + .seconds(9)) == start + .seconds(9))
    }

    @Test func noIntervalMeansEveryChangeAtOnce() {
        var schedule = ResubscribeSchedule(interval: .zero)
        for step in 0..<5 {
            schedule.note([0])
            #expect(schedule.takeDue(at: start + .milliseconds(step)) == [0])
        }
    }
}
