// glibc's allocator settings, which Swift's Glibc module does not export (see
// MallocTuning.swift in LinkstrPush). Elsewhere (macOS, musl) they do nothing.
#if defined(__linux__)
#include <features.h>
#endif

#if defined(__GLIBC__)
#include <malloc.h>

// Sets glibc's mmap threshold to `bytes`: allocations at least that large are mapped on their
// own and given back to the system when freed. Setting it also turns off glibc's dynamic
// threshold, which otherwise rises to the size of each large block freed. Returns 1 when set.
static inline int linkstr_set_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
#else
static inline int linkstr_set_mmap_threshold(int bytes) {
    (void)bytes;
    return 0;
}
#endif
