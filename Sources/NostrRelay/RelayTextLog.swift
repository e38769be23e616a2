/// Relay-controlled text on its way to a log (the text of `NOTICE`, `CLOSED` and `OK`, and why a
/// message could not be read): escaped so it can neither end a log line nor forge the next one,
/// cut to a length, and let through at most once per `interval`, so a relay cannot flood the log.
/// A connection keeps one for its relay; the lines it holds back are counted and the count goes
/// out with the next line that passes.
public struct RelayTextLog: Sendable, Equatable {
    /// What may be logged now: the escaped text, and how many relay texts were held back since
    /// the previous line.
    public struct Line: Sendable, Equatable {
        public var text: String
        public var suppressed: Int

        public init(text: String, suppressed: Int) {
            self.text = text
            self.suppressed = suppressed
        }
    }

    public let interval: Duration
    /// Longest escaped text, in Unicode scalars, before it is cut (and `…` appended).
    public let maxLength: Int
    private var lastLine: ContinuousClock.Instant?
    /// Relay texts held back since the last line.
    public private(set) var suppressed = 0
    /// Every relay text ever held back (for a counter).
    public private(set) var suppressedTotal = 0

    public init(interval: Duration = .seconds(10), maxLength: Int = 200) {
        self.interval = interval
        self.maxLength = max(maxLength, 1)
    }

    /// The line to log for `text` at `now`, or nil when a line went out less than `interval` ago.
    public mutating func admit(_ text: some StringProtocol, at now: ContinuousClock.Instant) -> Line? {
        if let lastLine, now - lastLine < interval {
            suppressed += 1
            suppressedTotal += 1
            return nil
        }
        lastLine = now
        defer { suppressed = 0 }
        return Line(text: Self.escape(text, maxLength: maxLength), suppressed: suppressed)
    }

    /// `text` with every character that could break or disguise a log line written as an escape:
    /// C0 and C1 controls and DEL (`\n`, `\r`, `\t` by name, the others as `\u{1b}`), the Unicode
    /// line and paragraph separators, and the bidirectional controls that make a terminal show
    /// text in another order than it was written. A backslash is doubled, so an escape in the
    /// output always stands for a character in the input. At most `maxLength` scalars are written.
    public static func escape(_ text: some StringProtocol, maxLength: Int) -> String {
        var output = String.UnicodeScalarView()
        var written = 0
        for scalar in text.unicodeScalars {
            let piece = escaped(scalar)
            guard written + piece.count <= maxLength else {
                output.append("…")
                return String(output)
            }
            output.append(contentsOf: piece)
            written += piece.count
        }
        return String(output)
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String.UnicodeScalarView {
        switch scalar.value {
        case 0x0A: return "\\n".unicodeScalars
        case 0x0D: return "\\r".unicodeScalars
        case 0x09: return "\\t".unicodeScalars
        case 0x5C: return "\\\\".unicodeScalars
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069:
            return "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars
        default:
            return String.UnicodeScalarView([scalar])
        }
    }
}
