import NostrProtocol

/// `created_at` of the events in ../shared/vectors/nip98-http-auth.json's "generated" cases, so
/// that seeds taken from there pass the time window and reach the signature check.
let now: Int64 = 1_700_000_000

/// The requests a header is checked against; the first two are the vectors' own.
let requests = [
    HTTPAuthRequest(method: "GET", path: "/api/v1/list", query: "page=2&sort=desc"),
    HTTPAuthRequest(method: "POST", path: "/api/v1/upload", body: Array(#"{"name":"alice","amount":21}"#.utf8)),
    HTTPAuthRequest(method: "POST", path: "/v1/push", body: Array(#"{"hello":"world"}"#.utf8)),
    HTTPAuthRequest(method: "DELETE", path: "/v1/devices"),
]

let dialectSets: [Set<HTTPAuth.Dialect>] = [[.standard, .linkstr], [.standard], [.linkstr], [.standard, .linkstr]]

/// `HTTPAuthVerifier.verify(authorization:request:)` on hostile `Authorization` headers. The
/// first byte picks the set-up; the rest is the header:
/// - bit 0: the rest is the whole header text (set), or the event JSON, sent as
///   `Nostr <base64>` (clear), so that the fuzzer mutates the JSON rather than its base64;
/// - bit 1: a configured public base URL; bits 2–3: the request; bits 4–5: accepted dialects.
/// Whatever verifies must match the request's method, be of an accepted dialect, and carry a
/// replay key.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let flags = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    let header = flags & 1 == 1 ? String(decoding: rest, as: UTF8.self) : "\(HTTPAuth.scheme) \(Base64.encode(rest))"

    let request = requests[Int(flags >> 2 & 3)]
    let accepted = dialectSets[Int(flags >> 4 & 3)]
    let verifier = HTTPAuthVerifier(
        maxSkewSeconds: 60, publicBaseURL: flags & 2 == 0 ? nil : "https://api.example.com/", acceptedDialects: accepted)

    guard let verified = try? verifier.verify(authorization: header, request: request, now: now) else { return 0 }
    guard verified.event.firstTagValue("method")?.uppercased() == request.method else {
        fatalError("verified a header for another method: \(header)")
    }
    guard accepted.contains(verified.dialect), verified.event.kind == HTTPAuth.kind, verified.pubkey == verified.event.pubkey,
        !verified.replayKey.isEmpty, verified.event.isValid
    else {
        fatalError("verified a header that breaks the contract: \(header)")
    }
    return 0
}
