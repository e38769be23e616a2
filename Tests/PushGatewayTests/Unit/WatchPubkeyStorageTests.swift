import NostrProtocol
import PushGateway
import Testing

/// The compact forms the watcher keeps large pubkey sets in, as values: they must answer exactly
/// as the sets of hex strings they replace.
struct WatchPubkeyStorageTests {
    static let pubkeys = (0..<200).map { _ in Keys.generate().publicKey.hex }

    @Test func pubkeyBytesReadStoredPubkeysAndNothingElse() {
        let hex = Self.pubkeys[0]
        #expect(PubkeyBytes(hex: hex) == PubkeyBytes(hex: hex))
        #expect(PubkeyBytes(hex: hex) != PubkeyBytes(hex: Self.pubkeys[1]))
        #expect(PubkeyBytes(hex: String(repeating: "0", count: 64)) != nil)
        #expect(PubkeyBytes(hex: String(repeating: "f", count: 64)) != nil)
        #expect(PubkeyBytes(hex: hex.uppercased()) == nil, "stored pubkeys are lowercase")
        #expect(PubkeyBytes(hex: String(hex.dropLast())) == nil, "63 digits")
        #expect(PubkeyBytes(hex: hex + "0") == nil, "65 digits")
        #expect(PubkeyBytes(hex: String(hex.dropLast()) + "g") == nil)
        #expect(PubkeyBytes(hex: "") == nil)
    }

    @Test func pubkeyBytesSortAsTheirHexDoes() throws {
        let bytes = try Self.pubkeys.map { try #require(PubkeyBytes(hex: $0)) }
        let sortedHex = Self.pubkeys.sorted()
        let sortedBytes = bytes.sorted()
        #expect(try sortedHex.map { try #require(PubkeyBytes(hex: $0)) } == sortedBytes)
        // Differences in the last digit only, where a comparison of the first words cannot decide.
        let prefix = String(repeating: "a", count: 63)
        #expect(try #require(PubkeyBytes(hex: prefix + "1")) < #require(PubkeyBytes(hex: prefix + "2")))
        #expect(try !(#require(PubkeyBytes(hex: prefix + "2")) < #require(PubkeyBytes(hex: prefix + "2"))))
    }

    @Test func aSortedArrayOfPubkeyBytesFindsExactlyItsMembers() throws {
        let members = Array(Self.pubkeys.prefix(120))
        let sorted = try members.map { try #require(PubkeyBytes(hex: $0)) }.sorted()
        for hex in members { #expect(try sorted.containsSorted(#require(PubkeyBytes(hex: hex)))) }
        for hex in Self.pubkeys.dropFirst(120) { #expect(try !sorted.containsSorted(#require(PubkeyBytes(hex: hex)))) }
        #expect(try ![PubkeyBytes]().containsSorted(#require(PubkeyBytes(hex: members[0]))))
        // Below the first and above the last.
        #expect(try !sorted.containsSorted(#require(PubkeyBytes(hex: String(repeating: "0", count: 64)))))
        #expect(try !sorted.containsSorted(#require(PubkeyBytes(hex: String(repeating: "f", count: 64)))))
    }

    @Test func sortedPubkeysAnswerAsASetDoes() {
        let members = Array(Self.pubkeys.prefix(75))
        let chunk = SortedPubkeys(sorted: members.sorted())
        let set = Set(members)
        for hex in Self.pubkeys { #expect(chunk.contains(hex) == set.contains(hex)) }
        #expect(Set(chunk) == set, "iterates every member")
        #expect(!SortedPubkeys(sorted: []).contains(members[0]))
        #expect(SortedPubkeys(sorted: [members[0]]).contains(members[0]))
    }
}
