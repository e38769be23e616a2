import NostrProtocol
import Testing

@Suite struct Base64URLTests {
    @Test func encodesWithoutPaddingInTheURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.encode(Array("f".utf8)) == "Zg")
    }

    @Test func decodesOnlyTheCanonicalUnpaddedForm() {
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("Zg") == Array("f".utf8))
        #expect(Base64URL.decode("Zg==") == nil, "padding")
        #expect(Base64URL.decode("+/8") == nil, "the standard alphabet")
        #expect(Base64URL.decode("Zh") == nil, "non-zero unused bits")
        #expect(Base64URL.decode("Z") == nil)
    }
}
