import PushGateway
import ServiceLifecycle
import Synchronization
import Testing

/// The gate that holds the table-querying services back until the migrations are in.
@Suite struct StartGateTests {
    final class Flag: Sendable {
        let value = Mutex(false)
    }

    struct Marking: Service {
        let ran: Flag
        func run() async throws { ran.value.withLock { $0 = true } }
    }

    @Test func waitersPassOnceItOpensAndLaterOnesAtOnce() async throws {
        let gate = StartGate()
        let passed = Flag()
        let waiter = Task {
            await gate.wait()
            passed.value.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!passed.value.withLock { $0 }, "held while closed")
        gate.open()
        await waiter.value
        #expect(passed.value.withLock { $0 })
        await gate.wait() // already open: returns at once
        #expect(gate.isOpen)
    }

    @Test func cancellingAWaiterReleasesItWithoutOpening() async throws {
        let gate = StartGate()
        let waiter = Task { await gate.wait() }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await waiter.value
        #expect(!gate.isOpen)
    }

    @Test func aGatedServiceRunsOnlyAfterTheGateOpens() async throws {
        let gate = StartGate()
        let ran = Flag()
        let service = StartsAfterGate(gate: gate, service: Marking(ran: ran))
        let running = Task { try await service.run() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!ran.value.withLock { $0 })
        gate.open()
        try await running.value
        #expect(ran.value.withLock { $0 })
    }

    @Test func aGatedServiceCancelledBeforeTheGateOpensNeverRuns() async throws {
        let gate = StartGate()
        let ran = Flag()
        let running = Task { try await StartsAfterGate(gate: gate, service: Marking(ran: ran)).run() }
        try await Task.sleep(for: .milliseconds(50))
        running.cancel()
        try await running.value
        #expect(!ran.value.withLock { $0 })
    }
}
