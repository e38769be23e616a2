import Foundation
import PushGateway
import Testing

@Suite struct UUIDLowercasedStringTests {
    @Test func aKnownIDIsWrittenInItsCanonicalLowercaseForm() throws {
        let id = try #require(UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"))
        #expect(id.lowercasedString == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    }

    @Test func everyIDMatchesFoundationsFormLowercased() {
        var ids = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))]
        ids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        ids += (0..<1_000).map { _ in UUID() }
        let mismatches = ids.filter { $0.lowercasedString != $0.uuidString.lowercased() }
        #expect(mismatches.isEmpty, "mismatched: \(mismatches.prefix(3))")
        // And it reads back as the same id.
        #expect(ids.allSatisfy { UUID(uuidString: $0.lowercasedString) == $0 })
    }
}
