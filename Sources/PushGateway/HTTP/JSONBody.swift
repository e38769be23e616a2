import Hummingbird
import NIOCore
import NostrProtocol

/// JSON response bodies, through NostrProtocol's writer (request bodies: GatewayWire's `RequestFields`).
enum JSONBody {
    static func object(_ fields: [String: JSONValue]) -> String { JSONValue.object(fields).serialized }

    static func response(_ status: HTTPResponse.Status, _ fields: [String: JSONValue]) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: object(fields))))
    }
}
