import Foundation
import PostgresNIO
import PushGateway
import Testing

/// `scripts/bench-gateway.sh` measures registrations/s beside pgbench running the registration
/// statement alone (`scripts/bench/register.pgbench`). That baseline means something only while
/// it is the gateway's statement: the script may differ only in the unnest's arguments (literals
/// for pgbench, parameters in the gateway).
struct RegistrationBenchmarkTests {
    /// Where the unnest's argument list lies in `sql`: from after `unnest(` to `WITH ORDINALITY`.
    static func arguments(_ sql: String) throws -> Range<String.Index> {
        let start = try #require(sql.range(of: "unnest("))
        let end = try #require(sql.range(of: "WITH ORDINALITY", range: start.upperBound..<sql.endIndex))
        return start.upperBound..<end.lowerBound
    }

    /// `sql` with the unnest's argument list taken out and whitespace collapsed.
    static func shape(_ sql: String) throws -> String {
        let arguments = try arguments(sql)
        let rest = sql[..<arguments.lowerBound] + "…) " + sql[arguments.upperBound...]
        return rest.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The array types of the unnest's arguments, in order (`$3::timestamptz[]` or
    /// `ARRAY[…]::timestamptz[]` both give `timestamptz`).
    static func argumentTypes(_ sql: String) throws -> [String] {
        // Array casts only: the literals hold scalar casts of their own (`md5(:n::text)`).
        try sql[arguments(sql)].split(separator: "::").dropFirst().compactMap { part in
            let name = part.prefix { $0.isLetter }
            return part.dropFirst(name.count).hasPrefix("[]") ? String(name) : nil
        }
    }

    @Test func thePgbenchBaselineRunsTheGatewaysRegistrationStatement() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let script = try String(contentsOf: root.appending(path: "scripts/bench/register.pgbench"), encoding: .utf8)
        // The script's one SQL command: after the \set lines, up to its closing semicolon.
        let command = try #require(script.range(of: "WITH input AS"))
        let body = script[command.lowerBound...].trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(body.hasSuffix(";"))
        #expect(try Self.shape(String(body.dropLast())) == Self.shape(RegisterDevicesStatement.sql))
        let types = try Self.argumentTypes(RegisterDevicesStatement.sql)
        #expect(types.count == 12)
        #expect(try Self.argumentTypes(String(body)) == types)
    }
}
