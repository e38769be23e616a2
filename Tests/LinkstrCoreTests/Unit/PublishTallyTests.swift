import LinkstrCore
import NostrProtocol
import NostrRelay
import Testing

/// When a publish may return: once every event was accepted somewhere, or once every send answered.
@Suite struct PublishTallyTests {
    static let first = Self.id(1), second = Self.id(2)

    @Test func settlesOnceEveryEventIsAcceptedSomewhereEvenWithSendsOut() {
        var tally = PublishTally(events: [Self.first, Self.second], sends: 4)
        tally.count(Self.first, .success(Self.answer(Self.first, true)))
        #expect(!tally.settled)
        tally.count(Self.first, .success(Self.answer(Self.first, true)))
        #expect(!tally.settled, "the same event twice does not count for the other")
        tally.count(Self.second, .success(Self.answer(Self.second, true)))
        #expect(tally.settled && tally.succeeded)
        #expect(tally.outstanding == 1)
    }

    @Test func settlesUnsucceededWhenTheLastSendAnswersWithoutAnAcceptanceAndKeepsTheLastRefusal() {
        var tally = PublishTally(events: [Self.first], sends: 3)
        tally.count(Self.first, .success(Self.answer(Self.first, false, "blocked: no")))
        tally.count(Self.first, .failure(RelayError.timeout))
        #expect(!tally.settled)
        tally.count(Self.first, .success(Self.answer(Self.first, false, "restricted: members only")))
        #expect(tally.settled && !tally.succeeded)
        #expect(tally.lastRefusal == "restricted: members only")
    }

    @Test func nothingToSendIsSettledAndSucceeded() {
        let tally = PublishTally(events: [], sends: 0)
        #expect(tally.settled && tally.succeeded)
    }

    private static func id(_ byte: UInt8) -> EventID { try! EventID(hex: String(repeating: "0\(byte)", count: 32)) }

    private static func answer(_ id: EventID, _ accepted: Bool, _ message: String = "") -> PublishResult {
        PublishResult(eventID: id, accepted: accepted, message: message)
    }
}
