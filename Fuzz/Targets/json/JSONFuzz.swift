import NostrProtocol

/// `JSONValue(parsing:)` on arbitrary bytes must never crash, and whatever it accepts must survive
/// a write and a re-parse unchanged: events are re-serialized (ids, relay messages, payloads), so
/// a value the writer cannot reproduce would change what gets hashed or forwarded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONValue(parsing: bytes) else { return 0 }
    let written = value.serialized
    let reparsed: JSONValue
    do {
        reparsed = try JSONValue(parsing: written)
    } catch {
        fatalError("the writer's output does not parse (\(error)): \(written)")
    }
    guard reparsed == value else { fatalError("round trip changed the value: \(value) became \(reparsed)") }
    // The writer is canonical: writing the re-parsed value gives the same bytes.
    guard reparsed.serialized == written else { fatalError("serialization is not stable: \(written)") }
    // The String entry point must agree with the bytes one on valid UTF-8 (all JSON is).
    if let text = String(validating: bytes, as: UTF8.self) {
        guard (try? JSONValue(parsing: text)) == value else { fatalError("String and [UInt8] parsing disagree") }
    }
    return 0
}
