import CSecp256k1Baseline
import NostrProtocol

#if canImport(Glibc)
    import Glibc
#endif

// Runs one operation N times, for `valgrind --tool=callgrind` instruction counts, which are
// repeatable where wall-clock figures on a shared 2-core machine are not.
//   instruction-counts <op> <iterations>
// Per-op cost = (count at N) − (count at 0), divided by N. See scripts/bench-instructions.sh.
let arguments = CommandLine.arguments
guard arguments.count == 3, let iterations = Int(arguments[2]) else {
    print("usage: instruction-counts <op> <iterations>")
    exit(2)
}
let op = arguments[1]

let author = Keys(secretKey: try! SecretKey(hex: "7f7ff03d123792d6ac594bfa67bf6d0c0ab55b6b1fdb6249303fe861f1ccba9a"))
let recipient = Keys(secretKey: try! SecretKey(hex: "4b22aa260e4acb7021e32f38a6cdf4b673c6a277755bfce287e370c924dc936d"))
let content = String(repeating: "linkstr ", count: 12) + "done"
let event = author.sign(kind: 1, content: content, createdAt: 1_700_000_000)
let eventJSON = event.json
let conversationKey = ConversationKey(secretKey: author.secretKey, publicKey: recipient.publicKey)
let kibibyte = String(repeating: "0123456789abcdef", count: 64)
let payload = try! NIP44.encrypt(kibibyte, conversationKey: conversationKey)
let rumor = UnsignedEvent(pubkey: author.publicKey, kind: 44001, tags: [["p", recipient.publicKey.hex]], content: "ping")
let wraps = (0..<64).map { _ in try! GiftWrap.make(rumor, author: author, recipient: recipient.publicKey) }
let cache = ConversationKeyCache()
// A gift wrap the size of a linkstr post's (about 2 KB of content), as an inbox relay and a watcher read it.
let post = String(repeating: "https://example.com/a/link/to/read ", count: 16)
let postRumor = UnsignedEvent(pubkey: author.publicKey, kind: 14, tags: [["p", recipient.publicKey.hex]], content: post)
let postWrap = try! GiftWrap.make(postRumor, author: author, recipient: recipient.publicKey)
let inboxMessage = ClientMessage.event(postWrap).json
let relayMessage = RelayMessage.event(subscriptionID: "watch-0", event: postWrap).json
let context = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE))!

var sink = 0
for index in 0..<iterations {
    switch op {
    case "raw-verify":
        var xonly = secp256k1_xonly_pubkey()
        sink &+= Int(secp256k1_xonly_pubkey_parse(context, &xonly, event.pubkey.bytes))
        sink &+= Int(secp256k1_schnorrsig_verify(context, event.sig.bytes, event.id.bytes, 32, &xonly))
    case "verify": sink &+= event.isValid ? 1 : 0
    case "parse-verify": sink &+= (try! NostrEvent(json: eventJSON)).isValid ? 1 : 0
    case "client-event-message":
        if case .event(let event) = try! ClientMessage(json: inboxMessage) { sink &+= Int(event.kind) }
    case "relay-event-message":
        if case .event(_, let event) = try! RelayMessage(json: relayMessage) { sink &+= Int(event.kind) }
    case "sign": sink &+= Int(author.sign(kind: 1, content: content, createdAt: 1_700_000_000).sig.bytes[0])
    case "ecdh": sink &+= Int(ConversationKey(secretKey: author.secretKey, publicKey: recipient.publicKey).exportBytes()[0])
    case "nip44-encrypt": sink &+= (try! NIP44.encrypt(kibibyte, conversationKey: conversationKey)).utf8.count
    case "nip44-decrypt": sink &+= (try! NIP44.decrypt(payload, conversationKey: conversationKey)).utf8.count
    case "wrap": sink &+= (try! GiftWrap.make(rumor, author: author, recipient: recipient.publicKey)).content.utf8.count
    case "unwrap": sink &+= (try! GiftWrap.unwrap(wraps[index & 63], keys: recipient)).rumor.content.utf8.count
    case "unwrap-cached": sink &+= (try! GiftWrap.unwrap(wraps[index & 63], keys: recipient, cache: cache)).rumor.content.utf8.count
    default:
        print("unknown op \(op)")
        exit(2)
    }
}
print(sink)
