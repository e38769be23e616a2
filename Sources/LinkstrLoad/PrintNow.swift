import Foundation

/// Prints a line a benchmark script waits for while the load tool runs (`await_load_line` in
/// scripts/lib/bench.sh) and writes it out at once. Standard output to a file is fully buffered,
/// so a plain `print` would reach the file when the buffer fills or the process exits, and the
/// script would open its CPU window at the wrong moment.
func printNow(_ line: String) {
    print(line)
    // NULL flushes every output stream; naming `stdout` is shared mutable state to Swift 6.
    fflush(nil)
}
