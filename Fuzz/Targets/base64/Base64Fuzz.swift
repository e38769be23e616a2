import NostrProtocol

/// Both base64 decoders on arbitrary text: the strict one (NIP-44 payloads) and the lenient one
/// (NIP-98 headers, padding optional). Each promises that every byte string has exactly one
/// accepted encoding, so whatever decodes must be exactly what `encode` writes for those bytes
/// (without its padding, where the input had none).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    if let bytes = Base64.decode(text) {
        guard Base64.encode(bytes) == text else { fatalError("strict decode accepted a non-canonical encoding: \(text)") }
    }

    if let bytes = Base64.decode(text, requirePadding: false) {
        var expected = Base64.encode(bytes)
        if !text.hasSuffix("=") { while expected.hasSuffix("=") { expected.removeLast() } }
        guard expected == text else { fatalError("lenient decode accepted a non-canonical encoding: \(text)") }
    }

    // Substrings take the same path as strings (NIP-98 decodes a slice of the header).
    let slice = text.dropFirst()
    guard Base64.decode(slice, requirePadding: false) == Base64.decode(String(slice), requirePadding: false) else {
        fatalError("Substring and String decoding disagree: \(text)")
    }
    return 0
}
