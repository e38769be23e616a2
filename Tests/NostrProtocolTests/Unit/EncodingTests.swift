import Foundation
import NostrProtocol
import Testing

@Suite struct HexTests {
    @Test func roundTrip() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "00017f80abff")
        #expect(Hex.decode("00017f80abff") == bytes)
    }

    @Test func aUUIDsBytesAreWrittenInTheLowercaseDashedForm() {
        let bytes: [UInt8] = [0x0F, 0x1E, 0x2D, 0x3C, 0x4B, 0x5A, 0x69, 0x78, 0x87, 0x96, 0xA5, 0xB4, 0xC3, 0xD2, 0xE1, 0xF0]
        #expect(bytes.withUnsafeBytes(Hex.uuidForm) == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        // Foundation's form, lowercased, for many ids.
        let ids = (0..<500).map { _ in UUID() }
        let mismatched = ids.filter { id in withUnsafeBytes(of: id.uuid, Hex.uuidForm) != id.uuidString.lowercased() }
        #expect(mismatched.isEmpty, "mismatched: \(mismatched.prefix(3))")
        // Another count is written the same way, and never out of bounds.
        #expect([UInt8]().withUnsafeBytes(Hex.uuidForm) == "")
        #expect([UInt8](repeating: 0xAB, count: 5).withUnsafeBytes(Hex.uuidForm) == "abababab-ab")
    }

    @Test func rejectsUppercaseUnlessAllowed() {
        #expect(Hex.decode("ABCD") == nil)
        #expect(Hex.decode("ABCD", allowUppercase: true) == [0xab, 0xcd])
    }

    @Test func rejectsOddLengthAndNonHex() {
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("00", count: 2) == nil)
    }

    /// Every byte value in either place of a pair, against what a hex digit is: the decoder
    /// judges characters without branches, so its edges (`/`, `:`, `@`, `G`, `` ` ``, `g`) are
    /// checked one by one.
    @Test(arguments: [false, true])
    func judgesEveryCharacter(allowUppercase: Bool) {
        let lower = Array("0123456789abcdef".utf8)
        let upper = Array("0123456789ABCDEF".utf8)
        for byte in UInt8.min...UInt8.max {
            let value = lower.firstIndex(of: byte) ?? (allowUppercase ? upper.firstIndex(of: byte) : nil)
            for text in [[byte, UInt8(ascii: "7")], [UInt8(ascii: "7"), byte]] {
                let decoded = Hex.decode(String(decoding: text, as: UTF8.self), allowUppercase: allowUppercase)
                if let value {
                    let expected = text[0] == byte ? UInt8(value) << 4 | 7 : 0x70 | UInt8(value)
                    #expect(decoded == [expected], "byte \(byte)")
                } else {
                    #expect(decoded == nil, "byte \(byte)")
                }
            }
        }
    }

    @Test func encodesEveryByteFromAnySequence() {
        let bytes = Array(UInt8.min...UInt8.max)
        let expected = bytes.map { String(format: "%02x", $0) }.joined()
        #expect(Hex.encode(bytes) == expected)
        // A filtered lazy sequence keeps no contiguous storage (and reports a count of 0).
        #expect(Hex.encode(bytes.lazy.filter { _ in true }) == expected)
        #expect(Hex.decode(expected) == bytes)
        #expect(Hex.encode([UInt8]()) == "")
    }
}

@Suite struct Base64Tests {
    @Test(arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func paddingOptionalOnlyWhenAllowed() {
        #expect(Base64.decode("Zm8") == nil)
        #expect(Base64.decode("Zm8", requirePadding: false) == Array("fo".utf8))
        #expect(Base64.decode("Zg", requirePadding: false) == Array("f".utf8))
    }

    @Test func rejectsNonCanonicalAndJunk() {
        #expect(Base64.decode("Zh==") == nil, "unused bits must be zero")
        #expect(Base64.decode("Zm9=") == nil, "unused bits must be zero")
        #expect(Base64.decode("Zm9v!A==") == nil)
        #expect(Base64.decode("Z===") == nil)
        #expect(Base64.decode("Zg==Zg==") == nil, "padding only at the end")
        #expect(Base64.decode("Zm 9v") == nil)
        #expect(Base64.decode("Z", requirePadding: false) == nil)
    }
}

@Suite struct JSONParserTests {
    @Test func parsesNestedValues() throws {
        let value = try JSONValue(parsing: #"{"a":[1,-2,3.5,true,false,null,"x\u00e9\ud83d\ude00"],"b":{}}"#)
        #expect(value["a"]?.arrayValue?.count == 7)
        #expect(value["a"]?.arrayValue?[0] == .integer(1))
        #expect(value["a"]?.arrayValue?[1] == .integer(-2))
        #expect(value["a"]?.arrayValue?[2] == .double(3.5))
        #expect(value["a"]?.arrayValue?[6] == .string("xé😀"))
        #expect(value["b"] == .object([:]))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "\"a\u{01}\"", "{\"a\":1,\"a\":2}",
        "\"\\x\"", "\"\\ud800\"", "[1] x", "{a:1}", "1e999",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(throws: JSONError.self) { try JSONValue(parsing: text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONError.self) { try JSONValue(parsing: [0x22, 0xff, 0xfe, 0x22]) }
    }

    @Test func boundsNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONError.self) { try JSONValue(parsing: deep) }
    }

    @Test func writerEscapesLikeNIP01() {
        var writer = JSONWriter()
        writer.string("a\n\"\\\r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F}/é\u{2028}")
        #expect(writer.string == "\"a\\n\\\"\\\\\\r\\t\\b\\f\\u0001\\u001f\u{7F}/é\u{2028}\"")
    }
}

@Suite struct TrimmingTests {
    /// The same set as Foundation's `.whitespacesAndNewlines`, which the gateway used before,
    /// except U+200B ZERO WIDTH SPACE: Foundation on Linux still counts it (an old Unicode
    /// category); Unicode's White_Space property and Go's `strings.TrimSpace` do not, nor do we.
    @Test func trimsExactlyWhatFoundationTrims() {
        let samples = [
            "", " ", "abc", "  abc  ", "\t\n\r\u{0B}\u{0C}abc\u{85}", "\u{A0}a b\u{3000}", "\u{2028}x\u{2029}",
            "\u{1680}\u{2000}\u{200A}y\u{202F}\u{205F}",
            "\u{FEFF}bom\u{FEFF}", " é\u{301} ", "\r\n crlf \r\n", "👍🏽 ", String(repeating: "ab", count: 300),
        ]
        for sample in samples {
            #expect(sample.trimmingWhitespace() == sample.trimmingCharacters(in: .whitespacesAndNewlines), "\(sample.debugDescription)")
            #expect(sample.dropFirst(0).trimmingWhitespace() == sample.trimmingCharacters(in: .whitespacesAndNewlines), "on a Substring")
        }
        #expect("\u{200B}zero width\u{200B} ".trimmingWhitespace() == "\u{200B}zero width\u{200B}")
    }

    /// The ASCII control characters and nothing else, whatever the encoding length around them.
    @Test func controlCharactersAreTheAsciiOnes() {
        for scalar in (0...0x7F).compactMap(Unicode.Scalar.init) {
            let expected = scalar.value < 0x20 || scalar.value == 0x7F
            #expect(("id" + String(Character(scalar)) + "é").containsControlCharacters == expected, "U+\(String(scalar.value, radix: 16))")
        }
        for clean in ["", "new_post", "é\u{301}", "👍🏽", "\u{85}next line is not ASCII", "\u{2028}", String(repeating: "日本", count: 50)] {
            #expect(!clean.containsControlCharacters, "\(clean.debugDescription)")
            #expect(!clean.dropFirst(0).containsControlCharacters, "on a Substring")
        }
    }
}
