public import Logging
package import NostrProtocol

/// Log lines as a handler received them (message and metadata), for tests that read the log.
public final class CapturedLog: Sendable {
    package let lines = Locked<[String]>([])

    public init() {}

    public func handler() -> some LogHandler { Handler(capture: self) }

    struct Handler: LogHandler {
        let capture: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = metadata.merging(event.metadata ?? [:]) { $1 }.map { "\($0)=\($1)" }.sorted().joined(separator: " ")
            capture.lines.withLock { $0.append("\(event.level) \(event.message) \(fields)") }
        }
    }
}
