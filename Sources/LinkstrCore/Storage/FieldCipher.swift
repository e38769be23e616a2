public import Crypto
public import Foundation

/// Encrypts the sensitive columns of one owner's rows (aliases, session names, member and creator
/// keys, URLs, notes, metadata) with that owner's data key: ChaCha20-Poly1305, a random nonce per
/// value, and the owner and column as associated data so a value cannot be moved to another
/// owner's row or another column unnoticed. Identifiers and timestamps stay clear for indexing.
public struct FieldCipher: Sendable {
    private let key: SymmetricKey
    private let owner: String

    public init(key: SymmetricKey, owner: String) {
        self.key = key
        self.owner = owner
    }

    /// A fresh 256-bit data key.
    public static func generateKey() -> SymmetricKey { SymmetricKey(size: .bits256) }

    public func seal(_ text: String, column: String) -> Data {
        // ChaChaPoly only fails for a key of the wrong size, which `SymmetricKey(size: .bits256)` rules out.
        try! ChaChaPoly.seal(Data(text.utf8), using: key, authenticating: associatedData(column)).combined
    }

    public func seal(optional text: String?, column: String) -> Data? { text.map { seal($0, column: column) } }

    public func open(_ data: Data, column: String) throws(StoreError) -> String {
        guard let box = try? ChaChaPoly.SealedBox(combined: data),
            let plain = try? ChaChaPoly.open(box, using: key, authenticating: associatedData(column)),
            let text = String(data: plain, encoding: .utf8)
        else { throw .undecryptable(column: column) }
        return text
    }

    public func open(optional data: Data?, column: String) throws(StoreError) -> String? {
        guard let data else { return nil }
        return try open(data, column: column)
    }

    /// A keyed hash for columns that must be unique or looked up but not readable (reaction keys).
    public func blindIndex(_ parts: String...) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(parts.joined(separator: "\u{1F}").utf8), using: key)
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    private func associatedData(_ column: String) -> Data { Data("\(owner)/\(column)".utf8) }
}
