import Foundation
import NostrProtocol

/// Reads the shared test vectors from `../shared/vectors` beside the repository, when present.
/// The most important cases are also embedded in the tests, so a clone without `../shared`
/// still checks them.
enum Vectors {
    static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["LINKSTR_VECTORS_DIR"] {
            return URL(fileURLWithPath: override)
        }
        // Tests/NostrProtocolTests/Support/Vectors.swift → repository root → ../shared/vectors
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared/vectors")
    }()

    static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("nip44.vectors.json").path)
    }

    static func json(_ name: String) throws -> JSONValue {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try JSONValue(parsing: [UInt8](data))
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }
}

extension JSONValue {
    var string: String { stringValue ?? "" }
    var array: [JSONValue] { arrayValue ?? [] }
    var int: Int64 { integerValue ?? -1 }
    var stringArrays: [[String]] { array.map { $0.array.map(\.string) } }
}

func hexBytes(_ text: String) -> [UInt8] { Hex.decode(text, allowUppercase: true)! }
