/// Errors reading NIP-19 bech32 entities.
public enum NIP19Error: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLong
    case invalidCharacter
    case mixedCase
    case missingSeparator
    case invalidChecksum
    case invalidPadding
    case unknownPrefix(String)
    case wrongPrefix(expected: String)
    case invalidLength
    case missingTLV(type: UInt8)
    case malformedTLV
    case invalidKey(KeyError)

    public var description: String {
        switch self {
        case .tooLong: "longer than \(Bech32.maxLength) characters"
        case .invalidCharacter: "invalid character"
        case .mixedCase: "mixed upper and lower case"
        case .missingSeparator: "missing separator or checksum"
        case .invalidChecksum: "invalid checksum"
        case .invalidPadding: "invalid padding"
        case .unknownPrefix(let prefix): "unknown prefix \(prefix)"
        case .wrongPrefix(let expected): "expected \(expected)"
        case .invalidLength: "wrong data length"
        case .missingTLV(let type): "missing required TLV \(type)"
        case .malformedTLV: "malformed TLV"
        case .invalidKey(let error): "invalid key: \(error)"
        }
    }
}

/// A NIP-19 entity, for display and input only (never inside events or filters).
public enum NIP19Entity: Sendable, Equatable {
    case publicKey(PublicKey)
    case secretKey(SecretKey)
    case note(EventID)
    case profile(pubkey: PublicKey, relays: [String])
    case event(id: EventID, relays: [String], author: PublicKey?, kind: UInt32?)
    case address(identifier: String, pubkey: PublicKey, kind: UInt32, relays: [String])

    public static func == (lhs: NIP19Entity, rhs: NIP19Entity) -> Bool {
        switch (lhs, rhs) {
        case (.publicKey(let a), .publicKey(let b)): a == b
        case (.secretKey(let a), .secretKey(let b)): a.storage.bytes == b.storage.bytes
        case (.note(let a), .note(let b)): a == b
        case (.profile(let a, let r1), .profile(let b, let r2)): a == b && r1 == r2
        case (.event(let a, let r1, let au1, let k1), .event(let b, let r2, let au2, let k2)): a == b && r1 == r2 && au1 == au2 && k1 == k2
        case (.address(let i1, let p1, let k1, let r1), .address(let i2, let p2, let k2, let r2)):
            i1 == i2 && p1 == p2 && k1 == k2 && r1 == r2
        default: false
        }
    }
}

/// NIP-19 encode/decode: `npub`, `nsec`, `note`, and the TLV forms `nprofile`, `nevent`, `naddr`.
public enum NIP19 {
    private enum TLVType {
        static let special: UInt8 = 0
        static let relay: UInt8 = 1
        static let author: UInt8 = 2
        static let kind: UInt8 = 3
    }

    public static func encode(_ entity: NIP19Entity) -> String {
        switch entity {
        case .publicKey(let key): return Bech32.encode(hrp: "npub", data: key.bytes)
        case .secretKey(let key): return key.storage.withUnsafeBytes { Bech32.encode(hrp: "nsec", data: Array($0)) }
        case .note(let id): return Bech32.encode(hrp: "note", data: id.bytes)
        case .profile(let pubkey, let relays):
            var tlv = TLVWriter()
            tlv.add(TLVType.special, pubkey.bytes)
            for relay in relays { tlv.add(TLVType.relay, Array(relay.utf8)) }
            return Bech32.encode(hrp: "nprofile", data: tlv.bytes)
        case .event(let id, let relays, let author, let kind):
            // rust-nostr's order: special, author, kind, relays.
            var tlv = TLVWriter()
            tlv.add(TLVType.special, id.bytes)
            if let author { tlv.add(TLVType.author, author.bytes) }
            if let kind { tlv.add(TLVType.kind, kind.bigEndianBytes) }
            for relay in relays { tlv.add(TLVType.relay, Array(relay.utf8)) }
            return Bech32.encode(hrp: "nevent", data: tlv.bytes)
        case .address(let identifier, let pubkey, let kind, let relays):
            var tlv = TLVWriter()
            tlv.add(TLVType.special, Array(identifier.utf8))
            tlv.add(TLVType.author, pubkey.bytes)
            tlv.add(TLVType.kind, kind.bigEndianBytes)
            for relay in relays { tlv.add(TLVType.relay, Array(relay.utf8)) }
            return Bech32.encode(hrp: "naddr", data: tlv.bytes)
        }
    }

    public static func decode(_ text: String) throws(NIP19Error) -> NIP19Entity {
        let (hrp, data) = try Bech32.decode(text)
        func key32<T>(_ make: ([UInt8]) throws(KeyError) -> T) throws(NIP19Error) -> T {
            guard data.count == 32 else { throw .invalidLength }
            do { return try make(data) } catch { throw .invalidKey(error) }
        }
        switch hrp {
        case "npub": return .publicKey(try key32 { (b) throws(KeyError) in try PublicKey(bytes: b) })
        case "nsec": return .secretKey(try key32 { (b) throws(KeyError) in try SecretKey(bytes: b) })
        case "note": return .note(try key32 { (b) throws(KeyError) in try EventID(bytes: b) })
        case "nprofile":
            let tlv = try TLVReader.read(data)
            guard let special = tlv.first(TLVType.special) else { throw .missingTLV(type: TLVType.special) }
            return .profile(pubkey: try publicKey(special), relays: tlv.strings(TLVType.relay))
        case "nevent":
            let tlv = try TLVReader.read(data)
            guard let special = tlv.first(TLVType.special) else { throw .missingTLV(type: TLVType.special) }
            guard special.count == 32 else { throw .invalidLength }
            let author = try tlv.first(TLVType.author).map { (b) throws(NIP19Error) in try publicKey(b) }
            let kind = try tlv.first(TLVType.kind).map { (b) throws(NIP19Error) in try uint32(b) }
            return .event(id: try! EventID(bytes: special), relays: tlv.strings(TLVType.relay), author: author, kind: kind)
        case "naddr":
            let tlv = try TLVReader.read(data)
            guard let special = tlv.first(TLVType.special) else { throw .missingTLV(type: TLVType.special) }
            guard let author = tlv.first(TLVType.author) else { throw .missingTLV(type: TLVType.author) }
            guard let kind = tlv.first(TLVType.kind) else { throw .missingTLV(type: TLVType.kind) }
            guard let identifier = String(validating: special, as: UTF8.self) else { throw .malformedTLV }
            return .address(
                identifier: identifier, pubkey: try publicKey(author), kind: try uint32(kind), relays: tlv.strings(TLVType.relay))
        default:
            throw .unknownPrefix(hrp)
        }
    }

    private static func publicKey(_ bytes: [UInt8]) throws(NIP19Error) -> PublicKey {
        guard bytes.count == 32 else { throw .invalidLength }
        do { return try PublicKey(bytes: bytes) } catch { throw .invalidKey(error) }
    }

    private static func uint32(_ bytes: [UInt8]) throws(NIP19Error) -> UInt32 {
        guard bytes.count == 4 else { throw .invalidLength }
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}

private struct TLVWriter {
    var bytes: [UInt8] = []
    mutating func add(_ type: UInt8, _ value: [UInt8]) {
        // NIP-19 lengths are one byte; longer values cannot be represented and are cut.
        let value = value.prefix(255)
        bytes.append(type)
        bytes.append(UInt8(value.count))
        bytes.append(contentsOf: value)
    }
}

private struct TLVReader {
    var entries: [(type: UInt8, value: [UInt8])] = []

    static func read(_ data: [UInt8]) throws(NIP19Error) -> TLVReader {
        var reader = TLVReader()
        var index = 0
        while index < data.count {
            guard index + 2 <= data.count else { throw .malformedTLV }
            let type = data[index]
            let length = Int(data[index + 1])
            index += 2
            guard index + length <= data.count else { throw .malformedTLV }
            reader.entries.append((type, Array(data[index..<(index + length)])))
            index += length
        }
        return reader
    }

    func first(_ type: UInt8) -> [UInt8]? { entries.first { $0.type == type }?.value }

    /// Relay URLs; entries that are not UTF-8 are skipped rather than failing the whole entity.
    func strings(_ type: UInt8) -> [String] {
        entries.filter { $0.type == type }.compactMap { String(validating: $0.value, as: UTF8.self) }
    }
}

extension UInt32 {
    fileprivate var bigEndianBytes: [UInt8] { [UInt8(self >> 24), UInt8(self >> 16 & 0xFF), UInt8(self >> 8 & 0xFF), UInt8(self & 0xFF)] }
}
