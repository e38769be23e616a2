#if canImport(Security)
    import Foundation
    import Security

    /// Secrets in the Keychain (generic passwords under one service) on Apple platforms: the default
    /// `SecretStore` there. Items are readable after the first unlock on this device only, so a
    /// notification service extension sharing `accessGroup` can open gift wraps while the phone is
    /// locked, and backups never carry the keys to another device.
    public struct KeychainSecretStore: SecretStore {
        public let service: String
        public let accessGroup: String?

        public init(service: String = "app.linkstr", accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        private func query(_ name: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: name,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func read(_ name: String) throws(StoreError) -> [UInt8]? {
            var request = query(name)
            request[kSecReturnData as String] = true
            request[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(request as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else { throw .secrets("keychain read failed (OSStatus \(status))") }
            return [UInt8](data)
        }

        public func write(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
            let attributes: [String: Any] = [
                kSecValueData as String: Data(bytes), kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            var status = SecItemUpdate(query(name) as CFDictionary, attributes as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(query(name).merging(attributes) { $1 } as CFDictionary, nil)
            }
            guard status == errSecSuccess else { throw .secrets("keychain write failed (OSStatus \(status))") }
        }

        public func delete(_ name: String) throws(StoreError) {
            let status = SecItemDelete(query(name) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw .secrets("keychain delete failed (OSStatus \(status))")
            }
        }
    }
#endif
