import Foundation
import NostrProtocol
import TestSupport
import Testing

/// Live interop with rust-nostr (nostr-sdk 0.45.1 through its Python bindings).
@Suite(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
struct InteropTests {
    static let contents = [
        "hello", "", "line1\nline2 \"q\" \\ \r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F} / é 😀 \u{2028}",
        #"{"kind":"root","url":"https://x.y/z?a=1&b=2"}"#,
    ]

    @Test func eventsSignedHereVerifyThere() async throws {
        let keys = Keys.generate()
        let events = Self.contents.enumerated().map { index, content in
            keys.sign(kind: UInt16(index + 1), tags: [["p", Keys.generate().publicKey.hex, ""], ["t", "x"]], content: content)
        }
        let answers = try await RustNostrPeer.run(events.map { .object(["op": "verify_event", "event_json": .string($0.json)]) })
        for (event, answer) in zip(events, answers) {
            #expect(try answer.get() == .bool(true), "\(event.content)")
        }
        // And a tampered one does not.
        let tampered = events[0].json.replacingOccurrences(of: "\"content\":\"hello\"", with: "\"content\":\"hellO\"")
        #expect(try await RustNostrPeer.call("verify_event", ["event_json": .string(tampered)]) == .bool(false))
    }

    @Test func eventsSignedThereVerifyHere() async throws {
        let keys = Keys.generate()
        let tags = [["e", String(repeating: "a", count: 64), "wss://r.example"], ["x"], ["title", ""]]
        let answers = try await RustNostrPeer.run(
            Self.contents.map {
                .object([
                    "op": "sign_event", "secret_key": .string(keys.secretKey.exportHex()), "created_at": .integer(1_700_000_123),
                    "kind": .integer(30023), "tags": .tags(tags), "content": .string($0),
                ])
            })
        for (content, answer) in zip(Self.contents, answers) {
            let json = try #require(try answer.get().stringValue)
            let event = try NostrEvent(json: json)
            try event.verify()
            #expect(event.content == content)
            #expect(event.pubkey == keys.publicKey)
            #expect(event.json == json, "our serialization is byte-identical to rust-nostr's")
            let ours = UnsignedEvent(pubkey: keys.publicKey, createdAt: 1_700_000_123, kind: 30023, tags: tags, content: content)
            #expect(ours.id == event.id)
        }
    }

    @Test func nip44BothWays() async throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let plaintexts = ["a", "héllo 🌍", String(repeating: "x", count: 1024), String(repeating: "q", count: 65408)]
        let ours = try plaintexts.map { try NIP44.encrypt($0, secretKey: alice.secretKey, publicKey: bob.publicKey) }
        let decryptedThere = try await RustNostrPeer.run(
            ours.map {
                .object([
                    "op": "nip44_decrypt", "secret_key": .string(bob.secretKey.exportHex()), "public_key": .string(alice.publicKey.hex),
                    "payload": .string($0),
                ])
            })
        for (plain, answer) in zip(plaintexts, decryptedThere) {
            #expect(try answer.get().stringValue == plain)
        }
        let theirs = try await RustNostrPeer.run(
            plaintexts.map {
                .object([
                    "op": "nip44_encrypt", "secret_key": .string(bob.secretKey.exportHex()), "public_key": .string(alice.publicKey.hex),
                    "plaintext": .string($0),
                ])
            })
        for (plain, answer) in zip(plaintexts, theirs) {
            let payload = try #require(try answer.get().stringValue)
            #expect(try NIP44.decrypt(payload, secretKey: alice.secretKey, publicKey: bob.publicKey) == plain)
        }
    }

    @Test func giftWrapsMadeHereUnwrapThere() async throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let payload =
            #"{"conversation_id":"0123456789ABCDEF0123456789ABCDEF","root_id":"","kind":"root","url":"https://example.com/v","timestamp":1700000000}"#
        let rumors = [
            UnsignedEvent(pubkey: alice.publicKey, kind: 44001, content: payload),
            UnsignedEvent(
                pubkey: alice.publicKey, kind: 44001, tags: [["e", String(repeating: "b", count: 64), "", "root"]],
                content: "{\"kind\":\"reaction\"}"),
        ]
        let wraps = try rumors.map { try GiftWrap.make($0, author: alice, recipient: bob.publicKey) }
        let answers = try await RustNostrPeer.run(
            wraps.map {
                .object(["op": "unwrap_gift", "receiver_secret_key": .string(bob.secretKey.exportHex()), "wrap_json": .string($0.json)])
            })
        for (rumor, answer) in zip(rumors, answers) {
            let result = try answer.get()
            #expect(result["sender"]?.stringValue == alice.publicKey.hex)
            let theirRumor = try #require(result["rumor_json"]?.stringValue)
            #expect(theirRumor == rumor.json, "rust-nostr sees exactly our rumor JSON")
            #expect(try UnsignedEvent(json: theirRumor).content == rumor.content)
        }
    }

    @Test func giftWrapsMadeThereUnwrapHere() async throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let tags = [["e", String(repeating: "c", count: 64), "", "root"]]
        let content = #"{"conversation_id":"X","root_id":"cc","kind":"reaction","emoji":"👍","reaction_active":true,"timestamp":1}"#
        let wrapJSON = try #require(
            try await RustNostrPeer.call(
                "gift_wrap",
                [
                    "sender_secret_key": .string(alice.secretKey.exportHex()), "receiver_pubkey": .string(bob.publicKey.hex),
                    "rumor": .object([
                        "created_at": .integer(1_700_000_000), "kind": .integer(44001), "tags": .tags(tags), "content": .string(content),
                    ]),
                ]
            ).stringValue)
        let wrap = try NostrEvent(json: wrapJSON)
        #expect(wrap.kind == 1059 && wrap.tags == [["p", bob.publicKey.hex]])
        let opened = try GiftWrap.unwrap(wrap, keys: bob)
        #expect(opened.sender == alice.publicKey)
        #expect(opened.rumor.content == content && opened.rumor.tags == tags && opened.rumor.kind == 44001)
        #expect(opened.rumor.createdAt == 1_700_000_000)
        #expect(throws: GiftWrapError.wrapDecryption(.invalidMAC)) { try GiftWrap.unwrap(wrap, keys: alice) }
    }

    @Test func nip98HeaderBuiltThereVerifiesHere() async throws {
        let keys = Keys.generate()
        let now = UnixTime.now()
        let body = #"{"device_token":"abcd","apns_environment":"sandbox"}"#
        let header = try #require(
            try await RustNostrPeer.call(
                "nip98_header",
                [
                    "secret_key": .string(keys.secretKey.exportHex()), "url": .string("https://push.example.com/v1/devices/register"),
                    "method": .string("POST"), "body_utf8": .string(body), "created_at": .integer(now),
                ]
            ).stringValue)
        let verifier = HTTPAuthVerifier(publicBaseURL: "https://push.example.com")
        let verified = try verifier.verify(
            authorization: header, request: HTTPAuthRequest(method: "POST", path: "/v1/devices/register", body: Array(body.utf8)), now: now)
        #expect(verified.pubkey == keys.publicKey && verified.dialect == .standard)
        #expect(throws: HTTPAuthError.payloadMismatch) {
            try verifier.verify(
                authorization: header, request: HTTPAuthRequest(method: "POST", path: "/v1/devices/register", body: Array("{}".utf8)),
                now: now)
        }
    }

    @Test func bech32Agrees() async throws {
        let keys = Keys.generate()
        let event = keys.sign(kind: 1, content: "x")
        let answers = try await RustNostrPeer.run([
            .object(["op": "nip19_encode", "kind": "npub", "hex": .string(keys.publicKey.hex)]),
            .object(["op": "nip19_encode", "kind": "nsec", "hex": .string(keys.secretKey.exportHex())]),
            .object(["op": "nip19_encode", "kind": "note", "hex": .string(event.id.hex)]),
            .object(["op": "public_key", "secret_key": .string(keys.secretKey.exportHex())]),
        ])
        #expect(try answers[0].get().stringValue == keys.publicKey.npub)
        #expect(try answers[1].get().stringValue == keys.secretKey.exportNsec())
        #expect(try answers[2].get().stringValue == event.id.note)
        #expect(try answers[3].get().stringValue == keys.publicKey.hex)
    }
}
