package import Foundation

extension UUID {
    /// The lowercase 8-4-4-4-12 form (RFC 9562 §4), as a push's `apns-id` and FCM message id
    /// carry it, written straight from the bytes. Foundation's `uuidString` formats each byte
    /// through `sprintf` and is uppercase: `uuidString.lowercased()` took about 5,000 instructions
    /// of every push (`scripts/bench-send-instructions.sh`).
    package var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = Self.digit(byte >> 4)
                    text[position + 1] = Self.digit(byte & 0x0F)
                    position += 2
                }
                return position
            }
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ UInt8(ascii: "0") : nibble &+ (UInt8(ascii: "a") &- 10)
    }
}
