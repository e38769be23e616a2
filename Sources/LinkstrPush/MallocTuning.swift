import CMallocTuning

/// The gateway's one allocator setting: glibc's mmap threshold fixed at 1 MiB.
///
/// By default glibc raises its threshold to the size of every large block freed, so after the
/// watcher's start-up (hash tables of several megabytes that grow by doubling, each old table
/// freed) blocks of up to that size are carved from the heap, and what they free stays in the
/// process. At 100,000 watched pubkeys that kept some 10 MB resident for good
/// (docs/performance.md). Fixed, every block of 1 MiB or more is mapped on its own and returned
/// when freed; smaller blocks, which are nearly all of the gateway's, are unaffected.
///
/// An operator's own setting wins: `GLIBC_TUNABLES` naming `glibc.malloc.mmap_threshold`, or
/// `MALLOC_MMAP_THRESHOLD_`.
enum MallocTuning {
    static let mmapThresholdBytes: Int32 = 1 << 20

    /// Whether the environment leaves the threshold to the gateway.
    static func appliesTo(environment: [String: String]) -> Bool {
        (environment["MALLOC_MMAP_THRESHOLD_"] ?? "").isEmpty
            && environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.mmap_threshold") != true
    }

    /// Sets the threshold unless the environment set one; returns whether it did.
    @discardableResult
    static func apply(environment: [String: String]) -> Bool {
        guard appliesTo(environment: environment) else { return false }
        return linkstr_set_mmap_threshold(mmapThresholdBytes) == 1
    }
}
