import NostrProtocol

/// The `apns-unique-id`s of one connection's answers: a random 64-bit prefix and a counter from a
/// random start, laid out as a lowercase version-4 UUID. Foundation's `UUID()` asks the system for
/// randomness on every call (on Linux, an open of /dev/urandom each time): with two per push that
/// was a measurable share of the sandbox's CPU, which in the benchmarks the gateway competes with.
/// The text is written from the bytes (`Hex.uuidForm`), not through `uuidString.lowercased()`,
/// for the same reason. Unique across answers is all an `apns-unique-id` has to be.
struct AnswerIDs {
    private let prefix = UInt64.random(in: .min ... .max)
    private var counter = UInt64.random(in: .min ... .max)

    mutating func next() -> String {
        counter &+= 1
        var bytes = (prefix.bigEndian, counter.bigEndian)
        return withUnsafeMutableBytes(of: &bytes) { bytes in
            bytes[6] = bytes[6] & 0x0f | 0x40 // version 4
            bytes[8] = bytes[8] & 0x3f | 0x80 // RFC 9562 variant
            return Hex.uuidForm(UnsafeRawBufferPointer(bytes))
        }
    }
}
