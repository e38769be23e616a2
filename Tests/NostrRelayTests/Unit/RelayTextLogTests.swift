import NostrRelay
import Testing

/// Relay-controlled text on its way to a log, as a value: escaped and throttled.
struct RelayTextLogTests {
    @Test func controlCharactersAndDisguisesAreEscaped() {
        let escaped = RelayTextLog.escape("a\nb\r\tc\u{1b}[31m\u{7f}\u{85}\u{2028}\u{202e}\u{2066}\\d é 👍", maxLength: 200)
        #expect(escaped == #"a\nb\r\tc\u{1b}[31m\u{7f}\u{85}\u{2028}\u{202e}\u{2066}\\d é 👍"#)
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    }

    @Test func aForgedLineStaysOnTheLineItCameIn() {
        let forged = "nothing to see\n2026-11-24T06:00:00+0000 critical linkstr-push : admin token=abc"
        let escaped = RelayTextLog.escape(forged, maxLength: 500)
        #expect(!escaped.contains("\n"))
        #expect(escaped.hasPrefix(#"nothing to see\n2026"#))
    }

    @Test func longTextIsCutWithoutSplittingAnEscape() {
        #expect(RelayTextLog.escape(String(repeating: "x", count: 300), maxLength: 200) == String(repeating: "x", count: 200) + "…")
        // 9 scalars fit; the escape of the 10th (`\u{1b}`, 6 scalars) does not, so it is left out whole.
        #expect(RelayTextLog.escape("123456789\u{1b}", maxLength: 12) == "123456789…")
        #expect(RelayTextLog.escape("short", maxLength: 200) == "short")
    }

    @Test func atMostOneLinePerIntervalAndTheRestAreCounted() {
        var log = RelayTextLog(interval: .seconds(10), maxLength: 50)
        let start = ContinuousClock.now
        #expect(log.admit("first\n", at: start) == RelayTextLog.Line(text: #"first\n"#, suppressed: 0))
        #expect(log.admit("second", at: start + .seconds(1)) == nil)
        #expect(log.admit("third", at: start + .milliseconds(9_999)) == nil)
        #expect(log.suppressed == 2)
        #expect(log.admit("fourth", at: start + .seconds(10)) == RelayTextLog.Line(text: "fourth", suppressed: 2))
        #expect(log.suppressed == 0)
        #expect(log.admit("fifth", at: start + .seconds(12)) == nil)
        #expect(log.suppressedTotal == 3)
    }
}
