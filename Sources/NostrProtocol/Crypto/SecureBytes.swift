#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Heap storage for secret material that is wiped when the last reference goes away.
///
/// The bytes are written once in `init` and only read afterwards, so sharing the instance across
/// concurrency domains is safe: hence `@unchecked Sendable`.
final class SecureBytes: @unchecked Sendable {
    let count: Int
    private let pointer: UnsafeMutableRawPointer

    init(count: Int, initializer: (UnsafeMutableRawBufferPointer) -> Void) {
        self.count = count
        pointer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
        initializer(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { target in bytes.withUnsafeBytes { target.copyMemory(from: $0) } }
    }

    deinit {
        Self.wipe(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        pointer.deallocate()
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Overwrites memory with zeros in a way the optimiser may not drop.
    static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
            _ = memset_s(base, buffer.count, 0, buffer.count)
        #else
            explicit_bzero(base, buffer.count)
        #endif
    }

    /// Wipes a temporary array holding secret bytes.
    static func zero(_ array: inout [UInt8]) {
        array.withUnsafeMutableBytes { wipe($0) }
    }
}
