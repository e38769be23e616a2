import Crypto

/// SHA-256 as raw bytes or hex (not named `SHA256Digest`: that is swift-crypto's digest type).
enum SHA256Bytes {
    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).withUnsafeBytes { Hex.encode($0) }
    }
}
