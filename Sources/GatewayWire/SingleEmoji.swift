/// The one rule a typed push's `emoji` must meet: exactly one emoji.
///
/// The emoji goes into the alert title every recipient's phone shows (`New reaction <emoji> in
/// linkstr`), and anyone with a key can ask for a typed push. Free text there is a phishing line on
/// up to 500 lock screens per request; a single emoji is what the app sends and all it needs.
///
/// One emoji is one extended grapheme cluster whose scalars are all emoji or emoji glue (zero-width
/// joiner, VS16, the combining keycap, the tag characters of subdivision flags), and which is shown
/// as an emoji: its first scalar defaults to emoji presentation, or the cluster asks for it (VS16,
/// a keycap, a skin-tone modifier). That admits modifiers, ZWJ sequences, keycaps and flags, and
/// refuses text, digits and symbols that render as text (`1`, `©`, `⚠` without VS16).
public enum SingleEmoji {
    static let zeroWidthJoiner: Unicode.Scalar = "\u{200D}"
    static let variationSelector16: Unicode.Scalar = "\u{FE0F}"
    static let combiningKeycap: Unicode.Scalar = "\u{20E3}"
    /// Tag characters and their terminator spell subdivision flags (🏴󠁧󠁢󠁥󠁮󠁧󠁿).
    static let tags: ClosedRange<UInt32> = 0xE0020...0xE007F

    /// 🇦 … 🇿: two of them make a flag.
    static let regionalIndicators: ClosedRange<UInt32> = 0x1F1E6...0x1F1FF
    /// The black flag, the only base tag sequences (subdivision flags) build on.
    static let blackFlag: Unicode.Scalar = "\u{1F3F4}"
    /// The longest RGI sequences (families, couples with skin tones) have three joiners; a longer
    /// chain is a row of pictographs in one grapheme.
    static let maxJoiners = 3

    public static func isSingleEmoji(_ text: String) -> Bool {
        guard text.count == 1, let first = text.unicodeScalars.first else { return false }
        guard isEmojiBase(first) else { return false }
        let scalars = Array(text.unicodeScalars)
        // Regional indicators only as a pair: a flag, never a lone letter in a box.
        if regionalIndicators.contains(first.value) {
            return scalars.count == 2 && regionalIndicators.contains(scalars[1].value)
        }
        // Digits, # and * are emoji only as keycaps: with U+20E3, not merely VS16.
        let keycapBase = first.isASCII
        if keycapBase && !scalars.contains(combiningKeycap) { return false }
        var presentedAsEmoji = first.properties.isEmojiPresentation
        var joiners = 0
        for scalar in scalars.dropFirst() {
            switch scalar {
            case variationSelector16, combiningKeycap: presentedAsEmoji = true
            case zeroWidthJoiner:
                joiners += 1
                guard joiners <= maxJoiners else { return false }
            case _ where tags.contains(scalar.value):
                guard first == blackFlag else { return false }
            case _ where scalar.properties.isEmojiModifier: presentedAsEmoji = true
            case _ where isEmojiBase(scalar): continue
            default: return false
            }
        }
        return presentedAsEmoji
    }

    /// An emoji a sequence may start with or join: not one of the glue scalars, which are never
    /// an emoji on their own.
    private static func isEmojiBase(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isEmoji && scalar != zeroWidthJoiner && scalar != variationSelector16 && scalar != combiningKeycap
            && !tags.contains(scalar.value)
    }
}
