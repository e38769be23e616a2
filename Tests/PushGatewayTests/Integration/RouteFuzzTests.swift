import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import Testing

/// Random bodies and headers against every route: never a 5xx, and the server keeps answering.
@Suite(.serialized) struct RouteFuzzTests {
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state
        }
    }

    @Test func randomInputNeverCauses5xx() async throws {
        try await GatewayHarness.run { gateway in
            var random = SeededGenerator(state: 0x5EED)
            let keys = Keys.generate()
            let routes: [(HTTPRequest.Method, String)] = [
                (.post, "/v1/devices/register"), (.post, "/v1/devices/unregister"), (.put, "/v1/conversations/archive-state"),
                (.post, "/v1/push"), (.get, "/v1/devices"), (.delete, "/v1/account"), (.get, "/admin/status"), (.get, "/healthz"),
            ]
            let fragments = [
                "{", "}", "[", "]", "\"device_token\":", "\"apns_environment\":\"sandbox\"", "\"archived_conversation_ids\":[",
                "\"recipient_pubkeys\":[\"", "\"notification_type\":\"new_post\"", "null", "true", "1e999", "-0", "\"\\u0000\"",
                ",", ":", "\"\(String(repeating: "ab", count: 32))\"", "\"known_conversation_ids\":[\"\"]", "\u{FEFF}", "💥",
            ]
            for round in 0..<300 {
                let (method, path) = routes[Int.random(in: 0..<routes.count, using: &random)]
                let body = (0..<Int.random(in: 0...12, using: &random)).map { _ in fragments.randomElement(using: &random)! }.joined()
                var headers: HTTPFields = [:]
                switch Int.random(in: 0..<4, using: &random) {
                case 0: headers[.authorization] = "Nostr " + Base64.encode(Array(body.utf8))
                case 1: headers[.authorization] = String(repeating: "x", count: Int.random(in: 0...300, using: &random))
                default: break
                }
                let signed = Int.random(in: 0..<2, using: &random) == 0
                let response = try await gateway.send(signed ? keys : nil, method, path, json: body, headers: headers)
                #expect(response.status.code < 500, "round \(round): \(method) \(path) \(body) → \(response.status)")
            }
            #expect(try await gateway.send(nil, .get, "/healthz").status == .ok)
        }
    }
}
