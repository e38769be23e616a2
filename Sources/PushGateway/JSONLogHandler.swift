import Foundation
public import Logging
import NostrProtocol

/// One JSON object per line on stdout: `{"ts","level","label","msg", …metadata}`.
/// Metadata keys are dotted (`nostr.pubkey`, `push.reason`); callers never pass keys or full
/// device tokens.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: JSONValue] = [
            "ts": .string(Date().formatted(.iso8601)), "level": .string(event.level.rawValue),
            "label": .string(label), "msg": .string("\(event.message)"),
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) {
            fields[key] = .string("\(value)")
        }
        let line = JSONValue.object(fields).serialized + "\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
}
