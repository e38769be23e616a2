import GatewayWire
import PushGateway
import Testing

/// The typed push's `emoji` rule as a value: one emoji, in every form Unicode builds one.
@Suite struct SingleEmojiTests {
    @Test(arguments: [
        "👍", "🔥", "👀", "👍🏽", "👨‍👩‍👧‍👦", "🧑🏻‍❤️‍💋‍🧑🏼", "❤️", "☺️", "1️⃣", "#️⃣", "*️⃣", "🇩🇪", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "🏳️‍🌈", "☝🏻", "🏻", "🫠",
    ])
    func accepted(_ emoji: String) {
        #expect(SingleEmoji.isSingleEmoji(emoji), "\(emoji.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test(arguments: [
        "", "a", "1", "#", "©", "⚠", "⚠ Verify your account at evil.example", "👍👍", "👍 ", " 👍", "👍\u{0301}", "e\u{0301}",
        "\u{200D}", "\u{FE0F}", "\u{20E3}", "\u{E0067}", "👍\u{200B}", "<b>", "🇩🇪🇫🇷",
        // A row of word-emoji joined into one grapheme, hidden tag text, a lone regional
        // indicator, a digit with only VS16.
        "🆘\u{200D}🆓\u{200D}🆕\u{200D}🆗\u{200D}🔥", "👍\u{E0068}\u{E0069}\u{E007F}", "🇩", "1\u{FE0F}",
    ])
    func refused(_ text: String) {
        #expect(!SingleEmoji.isSingleEmoji(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }
}
