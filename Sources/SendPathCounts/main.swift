import Foundation
import GatewayWire
import Logging
import NostrProtocol
import PushGateway

// The gateway's APNs send path, run a set number of times against a running sandbox, for
// valgrind's callgrind: its instructions per push (the count of a run that sends PUSHES pushes
// less that of one that only builds them, divided by PUSHES) repeat from run to run where
// wall-clock figures on a shared machine do not. The sandbox runs in a process of its own, so
// only the gateway's side is counted: building each request, HTTP/2 framing and HPACK, TLS, and
// reading the answers. The pushes are relay-watch alerts, sent a batch at a time the way the
// watcher sends a statement's leased batch (one connection per batch).
//   send-path-counts SANDBOX_URL CA_FILE KEY_FILE PUSHES BATCH build|send
// See scripts/bench-send-instructions.sh.
let arguments = CommandLine.arguments
guard arguments.count == 7, let pushes = Int(arguments[4]), pushes >= 0, let batchSize = Int(arguments[5]), batchSize > 0,
    ["build", "send"].contains(arguments[6])
else {
    print("usage: send-path-counts SANDBOX_URL CA_FILE KEY_FILE PUSHES BATCH build|send")
    exit(2)
}
let sends = arguments[6] == "send"
let (url, caFile) = (arguments[1], arguments[2])
let key = try String(contentsOfFile: arguments[3], encoding: .utf8)
let topic = "app.linkstr.bench"
let configuration = APNsConfiguration(
    disabled: false, apps: [APNsApp(topic: topic, keyID: "BENCHKEY01", teamID: "BENCHTEAM1", privateKeyPEM: key)],
    defaultTopic: topic, productionURL: url, sandboxURL: url, caFile: caFile)
var logger = Logger(label: "send-path-counts")
logger.logLevel = .warning
let sender = try HTTP2APNsSender(configuration: configuration, logger: logger)

/// 64 hex characters from `index`, the same in every run.
func hex64(_ index: Int, _ salt: UInt8) -> String {
    Hex.encode((0..<32).map { UInt8(truncatingIfNeeded: (index &* 131 &+ $0 &* 7) ^ Int(salt)) })
}

/// Batch `batch`'s pushes: one device each, ids and tokens the same in every run.
func jobs(batch: Int, count: Int) -> [ClaimedJob] {
    (0..<count).map { member in
        let index = batch * count + member
        let recipient = hex64(index, 0x5a)
        let idBytes = (0..<16).map { UInt8(truncatingIfNeeded: index >> (($0 % 4) * 8) &+ $0) }
        let apnsID = UUID(uuid: idBytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
        return ClaimedJob(
            id: Int64(batch), apnsID: apnsID, destination: .apns(token: hex64(index, 0xa5), environment: .sandbox, kind: .alert),
            pubkey: recipient, topic: topic, deviceUpdatedAt: Date(timeIntervalSince1970: 1_700_000_000),
            notification: .giftWrap(wrapID: hex64(index, 0x33), relay: "wss://relay.example.com", count: 1, recipient: recipient),
            attempts: 1, expiresAt: Date(timeIntervalSince1970: 1_900_000_000), inBatch: true)
    }
}

/// Sends each batch and stops the process unless every push was delivered.
func send(_ batches: [[ClaimedJob]]) async {
    for (batch, round) in batches.enumerated() {
        let results = await sender.send(round)
        guard results.allSatisfy({ $0.outcome == .delivered }) else {
            print("batch \(batch): not every push was delivered: \(results.map(\.status))")
            exit(1)
        }
    }
}

// The main thread waits on a semaphore rather than running an async main: valgrind 3.19 stops
// with an internal error under the dispatch main queue an async main parks the thread in.
let finished = DispatchSemaphore(value: 0)
Task.detached {
    // Warm-up, the same in every run: both connections open, their TLS and HTTP/2 set up, the
    // provider token signed and in each connection's HPACK table.
    await send((0..<4).map { jobs(batch: $0, count: batchSize) })
    // Built in both runs, sent in one: the difference is the send path alone.
    let counted = (4..<(4 + pushes / batchSize)).map { jobs(batch: $0, count: batchSize) }
    if sends { await send(counted) }
    print("sent \(4 * batchSize) warm-up pushes, built \(counted.count * batchSize) and \(sends ? "sent" : "did not send") them")
    finished.signal()
}
finished.wait()
