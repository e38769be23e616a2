internal import CSecp256k1

/// A secp256k1 secret key in [1, n-1]. Its bytes live in wiped-on-free storage and are only
/// printed through the explicit `exportHex()` / `exportNsec()` calls, never by `description`.
public struct SecretKey: Sendable, CustomStringConvertible {
    let storage: SecureBytes

    /// Reads 32 bytes; throws when they are zero or not below the curve order.
    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == 32 else { throw .malformed(expectedBytes: 32) }
        let valid = bytes.withUnsafeBufferPointer {
            secp256k1_ec_seckey_verify(Secp256k1Context.shared.pointer, $0.baseAddress!) == 1
        }
        guard valid else { throw .secretKeyOutOfRange }
        storage = SecureBytes(bytes)
    }

    public init(hex: some StringProtocol) throws(KeyError) {
        guard var bytes = Hex.decode(hex, count: 32, allowUppercase: true) else { throw .malformed(expectedBytes: 32) }
        defer { SecureBytes.zero(&bytes) }
        try self.init(bytes: bytes)
    }

    /// Reads an `nsec1…` string.
    public init(nsec: String) throws(KeyError) {
        let entity: NIP19Entity
        do { entity = try NIP19.decode(nsec) } catch { throw .bech32(error) }
        guard case .secretKey(let key) = entity else { throw .bech32(.wrongPrefix(expected: "nsec")) }
        self = key
    }

    /// Reads hex or `nsec`, whichever the text is.
    public init(parsing text: String) throws(KeyError) {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasPrefix("nsec1") { try self.init(nsec: trimmed) } else { try self.init(hex: trimmed) }
    }

    /// A fresh key from the system CSPRNG.
    public static func generate() -> SecretKey {
        while true {
            var candidate = SecureRandom.bytes(32)
            defer { SecureBytes.zero(&candidate) }
            if let key = try? SecretKey(bytes: candidate) { return key }
        }
    }

    /// The x-only public key.
    public var publicKey: PublicKey { Keys(secretKey: self).publicKey }

    /// The raw secret as lowercase hex. Handle with care.
    public func exportHex() -> String { storage.withUnsafeBytes { Hex.encode($0) } }
    /// The secret as `nsec1…`. Handle with care.
    public func exportNsec() -> String { NIP19.encode(.secretKey(self)) }

    /// Never prints the key.
    public var description: String { "SecretKey(redacted)" }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }
}
