// Preloaded into a Swift executable run under valgrind 3.19 (scripts/bench-watch.sh CALLGRIND=1).
// An async main parks its thread in libdispatch, which calls sigsuspend on a mask in read-only
// memory; valgrind's wrapper of rt_sigsuspend edits the caller's mask in place and dies on the
// write ("VALGRIND INTERNAL ERROR ... signal 11"). This sigsuspend hands the kernel a copy.
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    // The kernel's sigset is 64 bits, not glibc's 1024.
    return (int)syscall(SYS_rt_sigsuspend, &copy, 8);
}
