import NIOCore
import NIOWebSocket

/// Writes text messages to a relay on a `RelaySocket`.
struct RelaySocketWriter: Sendable {
    let link: RelaySocketLink

    func writeText(_ text: String) async throws {
        try await link.sendData(.text, ByteBuffer(string: text))
    }
}
