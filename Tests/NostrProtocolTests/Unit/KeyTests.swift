import Foundation
import NostrProtocol
import Testing

@Suite struct KeyTests {
    @Test func generatedKeysSignAndVerify() {
        let keys = Keys.generate()
        let message = SecureRandom.bytes(32)
        let signature = keys.sign(message)
        #expect(keys.publicKey.verify(signature, message: message))
        var tampered = message
        tampered[0] ^= 1
        #expect(!keys.publicKey.verify(signature, message: tampered))
    }

    @Test func importExportRoundTrips() throws {
        let secret = try SecretKey(hex: "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa")
        #expect(secret.exportNsec() == "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5")
        let back = try SecretKey(nsec: secret.exportNsec())
        #expect(back.exportHex() == secret.exportHex())
        let pub = try PublicKey(hex: "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e")
        #expect(pub.npub == "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg")
        #expect(try PublicKey(npub: pub.npub) == pub)
        #expect(try PublicKey(parsing: " \(pub.npub)\n") == pub)
        #expect(try SecretKey(parsing: secret.exportNsec()).exportHex() == secret.exportHex())
    }

    @Test func secretKeyNeverPrints() {
        let keys = Keys.generate()
        let secretHex = keys.secretKey.exportHex()
        #expect(!"\(keys.secretKey)".contains(secretHex))
        #expect(!"\(keys)".contains(secretHex))
        #expect(!String(reflecting: keys.secretKey).contains(secretHex))
    }

    @Test func rejectsOutOfRangeSecrets() {
        #expect(throws: KeyError.secretKeyOutOfRange) { try SecretKey(hex: String(repeating: "0", count: 64)) }
        #expect(throws: KeyError.secretKeyOutOfRange) {
            try SecretKey(hex: "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141") // n
        }
        #expect(throws: KeyError.malformed(expectedBytes: 32)) { try SecretKey(hex: "abcd") }
        #expect(throws: KeyError.malformed(expectedBytes: 32)) { try SecretKey(hex: String(repeating: "g", count: 64)) }
    }

    @Test func rejectsPublicKeysOffTheCurve() {
        // x = 5 has no square root mod p (BIP-340 vector 5 uses it).
        #expect(throws: KeyError.notOnCurve) {
            try PublicKey(hex: "eefdea4cdb677750a420fee807eacf21eb9898ae79b9768766e4faa04a2d4a34")
        }
        #expect(throws: KeyError.notOnCurve) { try PublicKey(hex: String(repeating: "f", count: 64)) }
        #expect(throws: KeyError.malformed(expectedBytes: 32)) { try PublicKey(hex: "00") }
    }

    /// Embedded BIP-340 vector 1 (so a clone without ../shared still checks signing).
    @Test func bip340EmbeddedVector() throws {
        let keys = Keys(secretKey: try SecretKey(hex: "B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF"))
        #expect(keys.publicKey.hex == "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659")
        let aux = hexBytes("0000000000000000000000000000000000000000000000000000000000000001")
        let message = hexBytes("243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89")
        let signature = keys.sign(message, auxRand: aux)
        #expect(
            signature.hex
                == "6896bd60eeae296db48a229ff71dfe071bde413e6d43f917dc8dcf8c78de33418906d11ac976abccb20b091292bff4ea897efcb639ea871cfa95f6de339e4b0a"
        )
    }

    /// Every row of the official BIP-340 CSV: signing reproduces the signature where a secret
    /// key is given, verification agrees with the expected result everywhere.
    @Test(.enabled(if: Vectors.available)) func bip340CSV() throws {
        let rows = try Vectors.text("bip340-test-vectors.csv").split(whereSeparator: \.isNewline).dropFirst()
        #expect(rows.count == 19)
        for row in rows {
            let fields = row.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let (index, secret, pubHex, aux, message, sigHex, expected) = (
                fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6] == "TRUE"
            )
            if !secret.isEmpty {
                let keys = Keys(secretKey: try SecretKey(hex: secret))
                #expect(keys.publicKey.hex == pubHex.lowercased(), "row \(index)")
                #expect(keys.sign(hexBytes(message), auxRand: hexBytes(aux)).hex == sigHex.lowercased(), "row \(index)")
            }
            let verified: Bool
            if let pub = try? PublicKey(hex: pubHex), let sig = try? Signature(hex: sigHex.lowercased()) {
                verified = pub.verify(sig, message: message.isEmpty ? [] : hexBytes(message))
            } else {
                verified = false // a public key off the curve cannot verify anything
            }
            #expect(verified == expected, "row \(index)")
        }
    }
}
