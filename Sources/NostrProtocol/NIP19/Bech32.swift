/// Classic bech32 (BIP-173, checksum constant 1, not bech32m) without BIP-173's 90-character
/// limit, which NIP-19 lifts because TLV entities carry relay URLs.
enum Bech32 {
    private static let charset: [UInt8] = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (index, char) in charset.enumerated() { table[Int(char)] = Int8(index) }
        return table
    }()
    /// NIP-19 suggests 5000 characters as the practical limit.
    static let maxLength = 5000

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var checksum: UInt32 = 1
        for value in values {
            let top = checksum >> 25
            checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { checksum ^= generator[i] }
        }
        return checksum
    }

    private static func expandHRP(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    static func encode(hrp: String, data: [UInt8]) -> String {
        let words = convertBits(data, from: 8, to: 5, pad: true)!
        let hrpBytes = Array(hrp.utf8)
        let mod = polymod(expandHRP(hrpBytes) + words + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((mod >> (5 * (5 - UInt32($0)))) & 31) }
        return hrp + "1" + String(decoding: (words + checksum).map { charset[Int($0)] }, as: UTF8.self)
    }

    static func decode(_ text: String) throws(NIP19Error) -> (hrp: String, data: [UInt8]) {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxLength else { throw .tooLong }
        guard bytes.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { throw .invalidCharacter }
        let hasLower = bytes.contains { $0 >= 0x61 && $0 <= 0x7A }
        let hasUpper = bytes.contains { $0 >= 0x41 && $0 <= 0x5A }
        guard !(hasLower && hasUpper) else { throw .mixedCase }
        let lowered = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 32 : $0 }
        guard let separator = lowered.lastIndex(of: UInt8(ascii: "1")), separator >= 1, lowered.count - separator - 1 >= 6 else {
            throw .missingSeparator
        }
        let hrp = Array(lowered[..<separator])
        var words: [UInt8] = []
        words.reserveCapacity(lowered.count - separator - 1)
        for char in lowered[(separator + 1)...] {
            guard char < 128, reverse[Int(char)] >= 0 else { throw .invalidCharacter }
            words.append(UInt8(reverse[Int(char)]))
        }
        guard polymod(expandHRP(hrp) + words) == 1 else { throw .invalidChecksum }
        guard let data = convertBits(Array(words.dropLast(6)), from: 5, to: 8, pad: false) else { throw .invalidPadding }
        return (String(decoding: hrp, as: UTF8.self), data)
    }

    /// Regroups bits; without `pad`, leftover bits must be fewer than `from` and zero.
    static func convertBits(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0
        var bits = 0
        var output: [UInt8] = []
        let maxValue = (1 << to) - 1
        for value in data {
            guard Int(value) >> from == 0 else { return nil }
            accumulator = (accumulator << from) | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                output.append(UInt8((accumulator >> bits) & maxValue))
            }
        }
        if pad {
            if bits > 0 { output.append(UInt8((accumulator << (to - bits)) & maxValue)) }
        } else if bits >= from || ((accumulator << (to - bits)) & maxValue) != 0 {
            return nil
        }
        return output
    }
}
