import NIOCore
import NostrProtocol

/// A `TaskExecutor` that runs jobs on one SwiftNIO event loop. Code under
/// `withTaskExecutorPreference` of it runs on that loop between its suspension points, so it can
/// look at a channel's state and write to the channel in the same event-loop turn
/// (`DatabaseConnection` relies on this).
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    let eventLoop: any EventLoop

    private init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// One executor per event loop, made on first use. Event loops live as long as their group,
    /// which for the database client is the process.
    private static let executors = Locked<[ObjectIdentifier: EventLoopTaskExecutor]>([:])

    static func of(_ eventLoop: any EventLoop) -> EventLoopTaskExecutor {
        executors.withLock { executors in
            let key = ObjectIdentifier(eventLoop)
            if let executor = executors[key] { return executor }
            let executor = EventLoopTaskExecutor(eventLoop)
            executors[key] = executor
            return executor
        }
    }
}
