import NostrProtocol

/// The prefixes the second byte picks from in the constructed mode; the last is none of NIP-19's.
let prefixes = ["npub", "nsec", "note", "nprofile", "nevent", "naddr", "nrelay"]

/// NIP-19 decoding of arbitrary text (users paste these). The first byte picks the mode:
/// - even: the rest is the text;
/// - odd: the second byte picks a prefix and the rest is the data, which the target encodes with
///   a valid checksum itself (random text almost never has one), so that the TLV reader and the
///   key checks behind it get fuzzed too. Bit 1 set: the text is sent in uppercase.
/// Whatever decodes must encode to a string that decodes to the same entity. The plain forms
/// (`npub`, `nsec`, `note`) have exactly one encoding, so there the encoding must be the input,
/// lowercased; the TLV forms may drop unknown or repeated entries, so there the re-encoding must
/// only be a fixed point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let mode = input.first else { return 0 }
    var text: String
    if mode & 1 == 0 {
        text = String(decoding: input.dropFirst(), as: UTF8.self)
    } else {
        guard input.count >= 2 else { return 0 }
        text = bech32(hrp: prefixes[Int(input[1]) % prefixes.count], data: Array(input.dropFirst(2)))
        if mode & 2 != 0 { text = text.uppercased() }
    }

    guard let entity = try? NIP19.decode(text) else { return 0 }
    let encoded = NIP19.encode(entity)
    let again: NIP19Entity
    do {
        again = try NIP19.decode(encoded)
    } catch {
        fatalError("an encoded entity does not decode (\(error)): \(encoded)")
    }
    guard again == entity else { fatalError("round trip changed the entity: \(text) -> \(encoded)") }
    switch entity {
    case .publicKey, .secretKey, .note:
        guard encoded == text.lowercased() else { fatalError("non-canonical encoding accepted: \(text) vs \(encoded)") }
    case .profile, .event, .address:
        guard NIP19.encode(again) == encoded else { fatalError("TLV re-encoding is not stable: \(encoded)") }
    }
    return 0
}

/// BIP-173 bech32 (not bech32m), written out here because NostrProtocol's encoder is internal and
/// only reachable through well-formed entities, while the point is to encode anything.
func bech32(hrp: String, data: [UInt8]) -> String {
    let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    var words: [UInt8] = []
    var accumulator = 0
    var bits = 0
    for byte in data {
        accumulator = (accumulator << 8 | Int(byte)) & 0xFFFF
        bits += 8
        while bits >= 5 {
            bits -= 5
            words.append(UInt8(accumulator >> bits & 31))
        }
    }
    if bits > 0 { words.append(UInt8(accumulator << (5 - bits) & 31)) }
    let hrpBytes = Array(hrp.utf8)
    let expanded = hrpBytes.map { $0 >> 5 } + [0] + hrpBytes.map { $0 & 31 }
    let checksum = polymod(expanded + words + [0, 0, 0, 0, 0, 0]) ^ 1
    let checkWords = (0..<6).map { UInt8(checksum >> (5 * (5 - UInt32($0))) & 31) }
    return hrp + "1" + String(decoding: (words + checkWords).map { charset[Int($0)] }, as: UTF8.self)
}

func polymod(_ values: [UInt8]) -> UInt32 {
    let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
    var checksum: UInt32 = 1
    for value in values {
        let top = checksum >> 25
        checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
        for i in 0..<5 where top >> UInt32(i) & 1 == 1 { checksum ^= generator[i] }
    }
    return checksum
}
