import Foundation

/// The `apns-unique-id`s of one connection's answers: a random 64-bit prefix and a counter from a
/// random start, laid out as a lowercase version-4 UUID. Foundation's `UUID()` asks the system for
/// randomness on every call (on Linux, an open of /dev/urandom each time): with two per push that
/// was a measurable share of the sandbox's CPU, which in the benchmarks the gateway competes with.
/// Unique across answers is all an `apns-unique-id` has to be.
struct AnswerIDs {
    private let prefix = UInt64.random(in: .min ... .max)
    private var counter = UInt64.random(in: .min ... .max)

    mutating func next() -> String {
        counter &+= 1
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: prefix >> (56 - 8 * UInt64(index)))
            bytes[8 + index] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(index)))
        }
        bytes[6] = bytes[6] & 0x0f | 0x40 // version 4
        bytes[8] = bytes[8] & 0x3f | 0x80 // RFC 9562 variant
        return UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString.lowercased()
    }
}
