import LinkstrWire
import NostrProtocol

/// Stands in for a missing `timestamp`; fixed so that a crash reproduces.
let now: Int64 = 1_700_000_000

/// `LinkstrPayload.decode`, the parser behind `LinkstrMessage.open` for a rumor's `content`
/// (everything before it is NIP-59 and NIP-44, fuzzed on their own). Whatever decodes must be
/// valid and must survive a write and a re-decode unchanged: the app writes payloads back out
/// when it edits or re-sends them, and a value that changes on the way would fork the ledger.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let payload = try? LinkstrPayload.decode(text, now: now) else { return 0 }
    do {
        try payload.validate()
    } catch {
        fatalError("a decoded payload fails validation (\(error)): \(text)")
    }
    let written = payload.json
    let again: LinkstrPayload
    do {
        again = try LinkstrPayload.decode(written, now: now + 1)
    } catch {
        fatalError("a decoded payload's JSON does not decode (\(error)): \(written)")
    }
    guard again == payload else { fatalError("round trip changed the payload: \(text) -> \(written)") }
    guard again.json == written else { fatalError("payload JSON is not stable: \(written)") }
    return 0
}
