import Foundation
import TestSupport
import Testing

/// The test helper that starts relays and gateways: a child gets stdin, stdout and stderr and no
/// other descriptor of the test process. An inherited socket outlives its closing (the child
/// holds it up), which once left a relay's hang-up unseen by its client for as long as an
/// unrelated child lived.
struct ChildProcessTests {
    @Test func aChildInheritsNoDescriptorButItsStandardOnes() async throws {
        var pipe: [Int32] = [0, 0]
        #expect(Foundation.pipe(&pipe) == 0)
        defer {
            close(pipe[0])
            close(pipe[1])
        }
        // `ls` lists its own descriptors: 0, 1, 2 and the one it reads the directory with.
        let (code, output) = try await ChildProcess.run("/bin/ls", ["/proc/self/fd"])
        #expect(code == 0)
        let descriptors = output.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        #expect(descriptors.filter { $0 > 2 }.count <= 1, "inherited: \(descriptors)")
        // pipe() sets no close-on-exec, like SwiftNIO's sockets: without the helper's care the
        // child would list both ends.
        #expect(pipe[0] > 3 && !descriptors.contains(pipe[0]) && !descriptors.contains(pipe[1]), "pipe \(pipe), child: \(descriptors)")
    }
}
