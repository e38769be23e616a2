import NostrProtocol

/// Event decoding and verification on arbitrary JSON, as a relay watcher gets it. Invariants:
/// `NostrEvent(json:)` and the `JSONValue` route decode the same events, a decoded event writes out and decodes back to itself, `verify()` agrees with itself on the
/// round-tripped copy, and an event rebuilt with its computed id always passes the id check (so
/// the signature check runs on fuzzed keys and signatures too).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // `NostrEvent(json:)` reads without a JSON tree where it can: it must make of any text what
    // the general route makes of it.
    let text = String(decoding: bytes, as: UTF8.self)
    let direct = try? NostrEvent(json: text)
    let general = (try? JSONValue(parsing: text)).flatMap { try? NostrEvent(jsonValue: $0) }
    guard direct == general else { fatalError("NostrEvent(json:) and the general route disagree on: \(text)") }

    guard let value = try? JSONValue(parsing: bytes), let event = try? NostrEvent(jsonValue: value) else { return 0 }
    let valid = event.isValid

    let copy: NostrEvent
    do {
        copy = try NostrEvent(json: event.json)
    } catch {
        fatalError("a decoded event's JSON does not decode (\(error)): \(event.json)")
    }
    guard copy == event else { fatalError("round trip changed the event: \(event.json)") }
    guard copy.isValid == valid else { fatalError("verify() differs after a round trip: \(event.json)") }

    let rebuilt = NostrEvent(
        id: event.computedID, pubkey: event.pubkey, createdAt: event.createdAt, kind: event.kind,
        tags: event.tags, content: event.content, sig: event.sig)
    do {
        try rebuilt.verifyID()
    } catch {
        fatalError("an event with its computed id fails the id check: \(rebuilt.json)")
    }
    _ = try? rebuilt.verifySignature()
    return 0
}
