import NostrProtocol
import Testing

/// `Locked`: what the package's shared state stands on.
@Suite struct LockedTests {
    /// Many tasks on every core changing one value: no increment is lost, which a missing or
    /// broken lock loses within a few thousand.
    @Test func concurrentChangesAreNotLost() async {
        let counter = Locked([Int: Int]())
        let tasks = 8, increments = 20_000
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for increment in 0..<increments { counter.withLock { $0[(task + increment) % 31, default: 0] += 1 } }
                }
            }
        }
        #expect(counter.withLock { $0.values.reduce(0, +) } == tasks * increments)
    }

    struct Refused: Error, Equatable {}

    /// The closure's result comes back, and its typed error goes through with the value as the
    /// closure left it.
    @Test func resultsAndTypedErrorsPassThrough() {
        let value = Locked(1)
        #expect(
            value.withLock {
                $0 += 1
                return $0 * 10
            } == 20)
        #expect(throws: Refused()) {
            try value.withLock { (current: inout Int) throws(Refused) in
                current = 5
                throw Refused()
            }
        }
        #expect(value.withLock { $0 } == 5)
    }
}
