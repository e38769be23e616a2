import PushGateway
import Testing

/// How the live-write loop turns its ordered queue into statements, as a value with no I/O.
struct LiveWriteTests {
    @Test func marksGatherPerRelayInTheOrderRelaysFirstAppear() {
        let steps = LiveWrite.plan([
            .mark(relay: "wss://b", pubkeys: ["1"]),
            .mark(relay: "wss://a", pubkeys: ["2"]),
            .mark(relay: "wss://b", pubkeys: ["3", "4"]),
        ])
        #expect(steps == [.mark(relay: "wss://b", pubkeys: ["1", "3", "4"]), .mark(relay: "wss://a", pubkeys: ["2"])])
    }

    @Test func aForgetAfterAMarkWinsAndTheMarkIsNotWritten() {
        // The race a shared queue settles: bob reached EOSE, then stopped being watched before
        // the mark was written. Written in order, the forget must come last; here the mark for
        // bob is not written at all, and carol's mark still is, before the forget.
        let steps = LiveWrite.plan([
            .mark(relay: "wss://a", pubkeys: ["bob", "carol"]),
            .forget(["bob"]),
        ])
        #expect(steps == [.mark(relay: "wss://a", pubkeys: ["carol"]), .forget(["bob"])])
    }

    @Test func aForgetOnOneRelayDropsOnlyThatRelaysMarks() {
        // Bob took relay a out of his inbox list: his mark there is not written, his mark on b
        // and carol's on a are, before the forget.
        let steps = LiveWrite.plan([
            .mark(relay: "wss://a", pubkeys: ["bob", "carol"]),
            .mark(relay: "wss://b", pubkeys: ["bob"]),
            .forgetOn(relay: "wss://a", pubkeys: ["bob"]),
        ])
        #expect(
            steps == [
                .mark(relay: "wss://a", pubkeys: ["carol"]), .mark(relay: "wss://b", pubkeys: ["bob"]),
                .forgetOn(relay: "wss://a", pubkeys: ["bob"]),
            ])
    }

    @Test func aMarkAfterAForgetIsWrittenAfterIt() {
        // Bob stopped being watched, registered again and reached EOSE, all within one batch.
        let steps = LiveWrite.plan([
            .forget(["bob"]),
            .mark(relay: "wss://a", pubkeys: ["bob"]),
        ])
        #expect(steps == [.forget(["bob"]), .mark(relay: "wss://a", pubkeys: ["bob"])])
    }

    @Test func aForgetCoversEveryRelayAndOnlyLaterMarksBringThePubkeyBack() {
        let steps = LiveWrite.plan([
            .mark(relay: "wss://a", pubkeys: ["bob"]),
            .mark(relay: "wss://b", pubkeys: ["bob", "carol"]),
            .forget(["bob"]),
            .mark(relay: "wss://a", pubkeys: ["bob"]),
        ])
        #expect(steps == [.mark(relay: "wss://b", pubkeys: ["carol"]), .forget(["bob"]), .mark(relay: "wss://a", pubkeys: ["bob"])])
    }

    @Test func marksOnEitherSideOfAForgetAreNotMerged() {
        let steps = LiveWrite.plan([
            .mark(relay: "wss://a", pubkeys: ["1"]),
            .forget(["9"]),
            .mark(relay: "wss://a", pubkeys: ["2"]),
        ])
        #expect(steps == [.mark(relay: "wss://a", pubkeys: ["1"]), .forget(["9"]), .mark(relay: "wss://a", pubkeys: ["2"])])
    }

    @Test func emptyWritesAndFullyForgottenMarksVanish() {
        #expect(LiveWrite.plan([]) == [])
        #expect(LiveWrite.plan([.mark(relay: "wss://a", pubkeys: []), .forget([])]) == [])
        #expect(LiveWrite.plan([.mark(relay: "wss://a", pubkeys: ["bob"]), .forget(["bob"])]) == [.forget(["bob"])])
    }
}
