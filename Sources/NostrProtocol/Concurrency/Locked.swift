// A package import because `withLock` is inlinable into the package's other modules.
#if canImport(Glibc)
    package import Glibc
#elseif canImport(Musl)
    package import Musl
#elseif canImport(Darwin)
    package import Darwin
#endif

/// A value behind a lock, for state that threads and tasks share: `withLock` runs its closure with
/// the value while no one else can touch it. Every module of the package keeps its shared state in
/// one of these.
///
/// Why not `Synchronization.Mutex`: on Linux it is built on futexes that ThreadSanitizer cannot
/// see, so TSan reports every access it guards as a race, and the real races in a report drown in
/// them (`scripts/sanitize.sh`). A pthread mutex is what TSan understands; uncontended, both cost
/// one atomic operation to take and one to give back.
package final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    package init(_ initial: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not take the same lock again.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure)
        -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
