import NostrProtocol
import Testing

@Suite struct NIP19Tests {
    @Test func specNprofileWithRelaysBeyond90Characters() throws {
        let text =
            "nprofile1qqsrhuxx8l9ex335q7he0f09aej04zpazpl0ne2cgukyawd24mayt8gpp4mhxue69uhhytnc9e3k7mgpz4mhxue69uhkg6nzv9ejuumpv34kytnrdaksjlyr9p"
        let entity = try NIP19.decode(text)
        let pubkey = try PublicKey(hex: "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d")
        #expect(entity == .profile(pubkey: pubkey, relays: ["wss://r.x.com", "wss://djbas.sadkb.com"]))
        #expect(NIP19.encode(entity) == text)
    }

    @Test func neventAndNaddrRoundTrip() throws {
        let author = try PublicKey(hex: "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e")
        let nevent = NIP19Entity.event(
            id: try EventID(hex: "6fc7885f2524e75c01465112d27633134a23550d1f987b15c28928caafe9e67c"),
            relays: ["wss://relay.example.com"], author: author, kind: 1)
        #expect(
            NIP19.encode(nevent)
                == "nevent1qqsxl3ugtujjfe6uq9r9zykjwce3xj3r25x3lxrmzhpgj2x24l57vlqzypl8a8zz4ydlauvl4y57tldpkuhqa0q6fsg5zee7y72zxnvx4h05uqcyqqqqqqgpzamhxue69uhhyetvv9ujuetcv9khqmr99e3k7mgs45stl"
        )
        #expect(try NIP19.decode(NIP19.encode(nevent)) == nevent)
        let naddr = NIP19Entity.address(identifier: "my-article", pubkey: author, kind: 30023, relays: ["wss://relay.example.com"])
        #expect(try NIP19.decode(NIP19.encode(naddr)) == naddr)
        let bare = NIP19Entity.event(
            id: try EventID(hex: "6fc7885f2524e75c01465112d27633134a23550d1f987b15c28928caafe9e67c"), relays: [], author: nil, kind: nil)
        #expect(try NIP19.decode(NIP19.encode(bare)) == bare)
    }

    @Test func uppercaseIsAcceptedMixedCaseIsNot() throws {
        let npub = "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"
        #expect(try NIP19.decode(npub.uppercased()) == NIP19.decode(npub))
        #expect(throws: NIP19Error.mixedCase) { try NIP19.decode("NPUB180CVV07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6") }
    }

    @Test func rejectsBadInput() {
        #expect(throws: NIP19Error.invalidChecksum) { try NIP19.decode("npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6wq") }
        #expect(throws: NIP19Error.invalidLength) { try NIP19.decode("npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6g5f6fxy8") }
        #expect(throws: NIP19Error.missingSeparator) { try NIP19.decode("npub") }
        #expect(throws: NIP19Error.invalidCharacter) { try NIP19.decode("npub1bbbbbbbbio") }
        #expect(throws: NIP19Error.tooLong) { try NIP19.decode("npub1" + String(repeating: "q", count: 5000)) }
        // Valid bech32 (BIP-173 test vectors) with prefixes NIP-19 does not define.
        #expect(throws: NIP19Error.unknownPrefix("a")) { try NIP19.decode("A12UEL5L") }
        #expect(throws: NIP19Error.unknownPrefix("abcdef")) { try NIP19.decode("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw") }
    }

    @Test(.enabled(if: Vectors.available)) func vectorFile() throws {
        let file = try Vectors.json("nip19.json")
        for vector in file["spec_examples"]!.array + file["generated_nostr_sdk"]!.array {
            let text = vector["bech32"]!.string
            let entity = try NIP19.decode(text)
            #expect(NIP19.encode(entity) == text, "\(text)")
            switch vector["kind"]!.string {
            case "npub": #expect(entity == .publicKey(try PublicKey(hex: vector["hex"]!.string)))
            case "nsec":
                guard case .secretKey(let key) = entity else {
                    Issue.record("nsec")
                    continue
                }
                #expect(key.exportHex() == vector["hex"]!.string)
            case "note": #expect(entity == .note(try EventID(hex: vector["hex"]!.string)))
            case "nprofile":
                #expect(
                    entity == .profile(pubkey: try PublicKey(hex: vector["pubkey"]!.string), relays: vector["relays"]!.array.map(\.string)))
            case "nevent":
                #expect(
                    entity
                        == .event(
                            id: try EventID(hex: vector["event_id"]!.string), relays: vector["relays"]!.array.map(\.string),
                            author: try PublicKey(hex: vector["author"]!.string), kind: UInt32(vector["event_kind"]!.int)))
            case "naddr":
                #expect(
                    entity
                        == .address(
                            identifier: vector["identifier"]!.string, pubkey: try PublicKey(hex: vector["author"]!.string),
                            kind: UInt32(vector["event_kind"]!.int), relays: vector["relays"]!.array.map(\.string)))
            default: Issue.record("unknown kind \(vector["kind"]!.string)")
            }
        }
        for vector in file["invalid"]!.array {
            #expect(throws: NIP19Error.self, "\(vector["reason"]!.string)") { try NIP19.decode(vector["input"]!.string) }
        }
    }
}
