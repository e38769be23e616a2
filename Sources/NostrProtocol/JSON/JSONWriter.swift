/// Compact JSON output with the NIP-01 escaping rules, shared by the event id preimage and
/// everything we put on the wire:
/// only `\n \" \\ \r \t \b \f` are escaped by name, other control characters become lowercase
/// `\u00xx`, and everything else (including `/`, DEL, U+2028) is written verbatim as UTF-8.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(reservingCapacity capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// Bytes that are already valid JSON (an event serialized elsewhere).
    public mutating func json(_ value: [UInt8]) { bytes.append(contentsOf: value) }

    /// A JSON string literal. Works on UTF-8 bytes: every byte ≥ 0x20 other than `"` and `\`
    /// is copied, which is the same as iterating unicode scalars because multi-byte UTF-8
    /// sequences never contain bytes below 0x80.
    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            var runStart = 0
            var i = JSONPlainBytes.firstNotPlain(in: utf8, from: 0)
            while i < utf8.count {
                let byte = utf8[i]
                if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                switch byte {
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
                case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
                case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
                default:
                    bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0x0F)])
                }
                i = JSONPlainBytes.firstNotPlain(in: utf8, from: i + 1)
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// A hex string literal of raw bytes (ids, keys, signatures).
    public mutating func hexString(_ value: [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value {
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func integer(_ value: some BinaryInteger) {
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func stringArray(_ values: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func tags(_ tags: [[String]]) {
        bytes.append(UInt8(ascii: "["))
        for (i, tag) in tags.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            stringArray(tag)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Any JSON value; object keys are written in sorted order.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .integer(let i): integer(i)
        case .double(let d): bytes.append(contentsOf: "\(d)".utf8)
        case .string(let s): string(s)
        case .array(let items):
            byte(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { byte(UInt8(ascii: ",")) }
                write(item)
            }
            byte(UInt8(ascii: "]"))
        case .object(let object):
            byte(UInt8(ascii: "{"))
            for (i, key) in object.keys.sorted().enumerated() {
                if i > 0 { byte(UInt8(ascii: ",")) }
                string(key)
                byte(UInt8(ascii: ":"))
                write(object[key]!)
            }
            byte(UInt8(ascii: "}"))
        }
    }
}
