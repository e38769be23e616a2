import Foundation
import PushGateway
import TestSupport
import Testing

/// docs/configuration.md is the one reference for the gateway's settings; these hold it to the
/// code both ways, so neither can change without the other.
@Suite struct ConfigurationReferenceTests {
    /// One row of a settings table: the keys in its first column, the first value written in code
    /// style in its second (nil for "required", "unset", "generated" and the like).
    struct Row {
        var keys: [String]
        var defaultValue: String?
    }

    static let reference = RustNostrPeer.repositoryRoot.appendingPathComponent("docs/configuration.md").path

    static func rows() throws -> [Row] {
        let text = try String(contentsOfFile: reference, encoding: .utf8)
        var rows: [Row] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            rows.append(Row(keys: codeSpans(cells[1]).filter(isKey), defaultValue: codeSpans(cells[2]).first))
        }
        return rows
    }

    /// Keys named in prose, outside the tables (the commands' own settings).
    static func keysInProse() throws -> Set<String> {
        let text = try String(contentsOfFile: reference, encoding: .utf8)
        guard let commands = text.range(of: "## Commands") else { return [] }
        return Set(codeSpans(String(text[commands.upperBound...])).filter(isKey))
    }

    static func codeSpans(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    static func isKey(_ text: String) -> Bool {
        text.count > 2 && text.first?.isUppercase == true && text.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }
    }

    /// Every key the gateway's code reads from an environment: `env["KEY"]`,
    /// `environment["KEY"]` and the `(env, "KEY", …)` helpers, in the gateway library and its
    /// executable.
    static func keysReadInCode() throws -> Set<String> {
        let pattern = try Regex(#"(?:env|environment)\s*(?:\[\s*"([A-Z][A-Z0-9_]+)"\s*\]|,\s*"([A-Z][A-Z0-9_]+)")"#)
        var keys: Set<String> = []
        for folder in ["Sources/PushGateway", "Sources/LinkstrPush"] {
            let root = RustNostrPeer.repositoryRoot.appendingPathComponent(folder).path
            let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            for file in files {
                let source = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
                for match in source.matches(of: pattern) {
                    if let key = match.output[1].substring ?? match.output[2].substring { keys.insert(String(key)) }
                }
            }
        }
        return keys
    }

    @Test func theReferenceListsExactlyTheKeysTheCodeReads() throws {
        let documented = Set(try Self.rows().flatMap(\.keys)).union(try Self.keysInProse())
        let read = try Self.keysReadInCode()
        #expect(read.count > 40, "the scan found the keys at all")
        #expect(read.subtracting(documented).sorted() == [], "read in code, missing from docs/configuration.md")
        #expect(documented.subtracting(read).sorted() == [], "in docs/configuration.md, read nowhere in code")
    }

    /// The least a gateway starts with; everything else takes its default.
    static let minimal = ["DATABASE_URL": "postgres://linkstr@127.0.0.1:5432/linkstr", "APNS_DISABLE": "1"]

    /// The whole configuration as text, so two can be compared field by field without the test
    /// naming the fields.
    static func dumped(_ env: [String: String]) throws -> String {
        var text = ""
        dump(try GatewayConfiguration.fromEnvironment(env), to: &text)
        return text
    }

    /// Setting a key to its documented default must change nothing: the default the reference
    /// states is the one the code applies.
    @Test func everyDocumentedDefaultIsTheCodesDefault() throws {
        let baseline = try Self.dumped(Self.minimal)
        // MIGRATIONS_DIR is read by the migrator, outside the configuration: checked below.
        let checked = try Self.rows().filter { $0.defaultValue != nil && $0.keys.count == 1 && $0.keys != ["MIGRATIONS_DIR"] }
        #expect(checked.count >= 25, "most keys have a default to check")
        for row in checked {
            let key = row.keys[0], value = try #require(row.defaultValue)
            var env = Self.minimal
            env[key] = value
            let configured: String
            do { configured = try Self.dumped(env) } catch {
                Issue.record("\(key)=\(value), its documented default, is refused: \(error)")
                continue
            }
            if configured != baseline { Issue.record("\(key): the documented default `\(value)` is not what the code applies") }
        }
        #expect(Migrator.defaultDirectory(environment: [:]).hasSuffix("/migrations"))
    }

    /// The check above can fail: a value other than the default does change the configuration.
    @Test func aValueOtherThanTheDefaultIsSeen() throws {
        var env = Self.minimal
        env["DELIVERY_LOOPS"] = "5"
        #expect(try Self.dumped(env) != Self.dumped(Self.minimal))
    }
}
