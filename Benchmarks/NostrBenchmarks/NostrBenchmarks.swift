import Benchmark
import CSecp256k1Baseline
import Crypto
import NostrProtocol
import WebPush

/// Crypto hot paths of NostrProtocol, each beside the baseline it is judged against:
/// - `secp256k1 raw verify` calls libsecp256k1 directly (x-only key parse + schnorrsig_verify),
///   the ceiling for `event verify`, which also recomputes the id;
/// - the rust-nostr figures come from scripts/bench/rust_nostr_baseline.py in the same run;
/// - `P-256 ephemeral key + ECDH` is swift-crypto alone doing what every Web Push message must
///   (a fresh key, one key agreement), the ceiling for `Web Push encrypt`.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        timeUnits: .microseconds,
        warmupIterations: 50,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    let author = Keys(secretKey: try! SecretKey(hex: "7f7ff03d123792d6ac594bfa67bf6d0c0ab55b6b1fdb6249303fe861f1ccba9a"))
    let recipient = Keys(secretKey: try! SecretKey(hex: "4b22aa260e4acb7021e32f38a6cdf4b673c6a277755bfce287e370c924dc936d"))
    let content = String(repeating: "linkstr ", count: 12) + "done" // ~100 bytes, like the Python baseline
    let event = author.sign(kind: 1, content: content, createdAt: 1_700_000_000)
    let eventJSON = event.json
    let unsigned = UnsignedEvent(pubkey: author.publicKey, createdAt: 1_700_000_000, kind: 1, content: content)

    Benchmark("secp256k1 raw verify (baseline)") { benchmark in
        let context = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE))!
        defer { secp256k1_context_destroy(context) }
        let pubkey = event.pubkey.bytes, sig = event.sig.bytes, message = event.id.bytes
        for _ in benchmark.scaledIterations {
            var xonly = secp256k1_xonly_pubkey()
            let parsed = secp256k1_xonly_pubkey_parse(context, &xonly, pubkey)
            let ok = secp256k1_schnorrsig_verify(context, sig, message, 32, &xonly)
            blackHole(parsed & ok)
        }
    }

    Benchmark("event verify (id + signature)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(event.isValid)
        }
    }

    Benchmark("event parse + verify") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! NostrEvent(json: eventJSON).isValid)
        }
    }

    Benchmark("event sign") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(unsigned.signed(by: author))
        }
    }

    let conversationKey = ConversationKey(secretKey: author.secretKey, publicKey: recipient.publicKey)
    let kibibyte = String(repeating: "0123456789abcdef", count: 64)
    let payload = try! NIP44.encrypt(kibibyte, conversationKey: conversationKey)

    Benchmark("nip44 encrypt 1 KiB") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! NIP44.encrypt(kibibyte, conversationKey: conversationKey))
        }
    }

    Benchmark("nip44 decrypt 1 KiB") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! NIP44.decrypt(payload, conversationKey: conversationKey))
        }
    }

    Benchmark("nip44 conversation key (ECDH + HKDF)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(ConversationKey(secretKey: author.secretKey, publicKey: recipient.publicKey))
        }
    }

    let rumor = UnsignedEvent(pubkey: author.publicKey, kind: 44001, tags: [["p", recipient.publicKey.hex]], content: "ping")

    Benchmark("gift wrap") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! GiftWrap.make(rumor, author: author, recipient: recipient.publicKey))
        }
    }

    // 64 distinct wraps cycled, as the Python baseline does.
    let wraps = (0..<64).map { _ in try! GiftWrap.make(rumor, author: author, recipient: recipient.publicKey) }

    Benchmark("unwrap (seal keys cached)") { benchmark in
        let cache = ConversationKeyCache()
        var index = 0
        for _ in benchmark.scaledIterations {
            blackHole(try! GiftWrap.unwrap(wraps[index & 63], keys: recipient, cache: cache))
            index &+= 1
        }
    }

    Benchmark("unwrap (no cache)") { benchmark in
        var index = 0
        for _ in benchmark.scaledIterations {
            blackHole(try! GiftWrap.unwrap(wraps[index & 63], keys: recipient))
            index &+= 1
        }
    }

    // One subscription, as a browser makes it; a ~200-byte message, what the gateway sends.
    let browserKey = P256.KeyAgreement.PrivateKey()
    let subscription = try! WebPushSubscriptionKeys(
        p256dh: Base64URL.encode(browserKey.publicKey.x963Representation), auth: Base64URL.encode([UInt8](repeating: 7, count: 16)))
    let message = Array(
        #"{"body":"Open the app to view","conversation_id":"c0ffee","event_id":"5c83da77af1dec6d7289834998ad7aafbd9e2191396d75ec3cc27f5a77226f36","title":"New message","type":"new_message"}"#
            .utf8)

    Benchmark("P-256 ephemeral key + ECDH (swift-crypto, baseline)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! P256.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: browserKey.publicKey))
        }
    }

    Benchmark("P-256 sender key from a random scalar + ECDH (WebPushEncryption's key)") { benchmark in
        var generator = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            blackHole(try! WebPushEncryption.freshSenderKey(using: &generator).sharedSecretFromKeyAgreement(with: browserKey.publicKey))
        }
    }

    Benchmark("Web Push encrypt (RFC 8291, one message)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! WebPushEncryption.encrypt(message, for: subscription))
        }
    }
}
