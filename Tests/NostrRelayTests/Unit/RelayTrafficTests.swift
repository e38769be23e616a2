import NostrRelay
import Testing

/// A relay's inbound rates and limits, as a value with explicit instants.
struct RelayTrafficTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    @Test func ratesAreTenSecondAverages() {
        var traffic = RelayTraffic(limits: RelayLimits(), origin: start)
        for second in 0..<10 { traffic.record(events: 50, invalid: second.isMultiple(of: 2) ? 1 : 0, at: at(Double(second) + 0.5)) }
        #expect(traffic.eventsPerSecond(at: at(9.9)) == 50)
        #expect(traffic.invalidPerSecond(at: at(9.9)) == 0.5)
        // Ten seconds later nothing of it is in the window.
        #expect(traffic.eventsPerSecond(at: at(20)) == 0)
    }

    @Test func aFloodIsMoreThanTheRateTimesTheWindowWithinIt() {
        var traffic = RelayTraffic(limits: RelayLimits(maxEventsPerSecond: 100), origin: start)
        #expect(traffic.record(events: 600, at: at(0.1)) == nil, "a burst above the rate is fine while the average holds")
        #expect(traffic.record(events: 400, at: at(5)) == nil, "1,000 in ten seconds: exactly the limit")
        #expect(traffic.record(events: 1, at: at(9.9)) == .flood)
        #expect(traffic.record(at: at(30)) == .flood, "a breach stays until the next connection")
        traffic.reset()
        #expect(traffic.breach == nil)
        #expect(traffic.record(events: 1, at: at(31)) == nil)
    }

    @Test func theWindowSlides() {
        var traffic = RelayTraffic(limits: RelayLimits(maxEventsPerSecond: 100), origin: start)
        #expect(traffic.record(events: 900, at: at(0.5)) == nil)
        // Second 0 has left the ten-second window at second 10.
        #expect(traffic.record(events: 900, at: at(10.2)) == nil)
        #expect(traffic.record(events: 200, at: at(10.4)) == .flood)
    }

    @Test func invalidEventsCountOverAMinute() {
        var traffic = RelayTraffic(limits: RelayLimits(maxInvalid: 5), origin: start)
        for second in 0..<5 { #expect(traffic.record(invalid: 1, at: at(Double(second * 10))) == nil) }
        #expect(traffic.record(invalid: 1, at: at(59)) == .invalid, "six within a minute")
        var slow = RelayTraffic(limits: RelayLimits(maxInvalid: 5), origin: start)
        for second in 0..<20 { #expect(slow.record(invalid: 1, at: at(Double(second) * 15)) == nil, "one every 15 s never adds up") }
    }

    @Test func noLimitsNoBreach() {
        var traffic = RelayTraffic(limits: RelayLimits(), origin: start)
        #expect(traffic.record(events: 1_000_000, invalid: 1_000_000, at: at(1)) == nil)
    }
}
