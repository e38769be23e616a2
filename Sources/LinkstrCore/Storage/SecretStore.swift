public import Foundation

/// Where secrets live: the account's `nsec` and its data key. Keychain on Apple platforms (the
/// app provides that implementation); `FileSecretStore` on Linux and in tests.
public protocol SecretStore: Sendable {
    func read(_ name: String) throws(StoreError) -> [UInt8]?
    func write(_ name: String, _ bytes: [UInt8]) throws(StoreError)
    func delete(_ name: String) throws(StoreError)
}

/// Secrets as files in a directory of mode 0700, each file of mode 0600, written atomically
/// (a temporary file renamed into place) so a crash never leaves half a key.
public struct FileSecretStore: SecretStore {
    public let directory: URL

    public init(directory: URL) throws(StoreError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        } catch {
            throw .secrets("cannot create \(directory.path): \(error.localizedDescription)")
        }
    }

    public func read(_ name: String) throws(StoreError) -> [UInt8]? {
        let url = try file(name)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do { return [UInt8](try Data(contentsOf: url)) } catch { throw .secrets("cannot read \(name): \(error.localizedDescription)") }
    }

    public func write(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        let url = try file(name)
        let temporary = directory.appendingPathComponent(".\(name).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw .secrets("cannot write \(name)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw .secrets("cannot write \(name): \(String(cString: strerror(errno)))")
        }
    }

    public func delete(_ name: String) throws(StoreError) {
        let url = try file(name)
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        do { try FileManager.default.removeItem(at: url) } catch { throw .secrets("cannot delete \(name): \(error.localizedDescription)") }
    }

    /// Names are ours (`nsec.<hex>`, `datakey.<hex>`), never paths.
    private func file(_ name: String) throws(StoreError) -> URL {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }), !name.hasPrefix(".")
        else {
            throw .secrets("invalid secret name")
        }
        return directory.appendingPathComponent(name)
    }
}
