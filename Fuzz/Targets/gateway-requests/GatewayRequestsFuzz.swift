import GatewayWire
import NostrProtocol

/// The gateway's request-body parsers on hostile bodies. The first byte picks the parser (its
/// value modulo 5); the rest is the body. Besides never crashing, what a parser returns must keep
/// the promises the store and the APNs sender rely on: bounded counts, lowercase hex keys and
/// tokens, no control characters, no blanks, no duplicates.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let selector = input.first else { return 0 }
    let body = Array(input.dropFirst())
    switch selector % 5 {
    case 0:
        guard let request = try? RegisterDeviceRequest.parse(body) else { return 0 }
        check(isDestination(request.destination), "register: bad destination \(request.deviceToken)")
        check(request.topic.map(isCleanText) ?? true, "register: topic not clean")
        check(request.relays.count <= RegisterDeviceRequest.maxRelays, "register: \(request.relays.count) relays")
        check(Set(request.relays).count == request.relays.count, "register: duplicate relays")
        check(request.relays.allSatisfy { (try? RelayURL($0.description)) == $0 }, "register: a relay not in normal form")
    case 1:
        guard let request = try? UnregisterDeviceRequest.parse(body) else { return 0 }
        let token = request.deviceToken
        check(
            isToken(token) || isFCMToken(token) || (try? PushEndpoint(token))?.description == token,
            "unregister: bad device token \(token)")
    case 2:
        guard let request = try? ArchiveStateRequest.parse(body) else { return 0 }
        check(isIDList(request.archived, max: ArchiveStateRequest.maxIDs), "archive: bad archived ids")
        if let known = request.known {
            check(isIDList(known, max: ArchiveStateRequest.maxIDs), "archive: bad known ids")
            check(Set(request.archived).isSubset(of: known), "archive: archived outside known")
        }
    case 3:
        guard let request = try? PushRequest.parse(body) else { return 0 }
        check(request.type != .giftWrap, "push: gift_wrap accepted from a client")
        check(isIDList(request.recipients, max: PushRequest.maxRecipients), "push: bad recipients")
        check(request.recipients.allSatisfy(isLowercaseKey), "push: recipient not a lowercase key")
        check(request.eventID.utf8.count <= 128 && request.conversationID.utf8.count <= 128, "push: id too long")
        check(isCleanText(request.eventID) && isCleanText(request.conversationID), "push: ids not clean")
        check((request.emoji?.utf8.count ?? 0) <= 64 && (request.postID?.utf8.count ?? 0) <= 128, "push: emoji or post id too long")
        check(request.type == .newEmojiReaction || (request.emoji == nil && request.postID == nil), "push: emoji on a new post")
        check(request.type != .newEmojiReaction || SingleEmoji.isSingleEmoji(request.emoji ?? ""), "push: emoji is not one emoji")
    default:
        guard let request = try? SuppressionRequest.parse(body) else { return 0 }
        check(isIDList(request.eventIDs, max: SuppressionRequest.maxEventIDs), "suppress: bad event ids")
        check(request.eventIDs.allSatisfy(isLowercaseKey), "suppress: event id not lowercase hex")
    }
    return 0
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

func isCleanText(_ text: String) -> Bool { !text.isEmpty && !text.containsControlCharacters && text.trimmingWhitespace() == text }

func isToken(_ token: String) -> Bool {
    (64...200).contains(token.utf8.count) && token.utf8.count % 2 == 0 && Hex.decode(token) != nil
}

func isFCMToken(_ token: String) -> Bool {
    (32...1_024).contains(token.utf8.count) && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_:".contains($0)) }
}

/// Each platform's promise: an APNs token lowercase hex, an FCM token of its characters, an
/// endpoint in normal form (it parses again to itself) and https.
func isDestination(_ destination: PushDestination) -> Bool {
    switch destination {
    case .apns(let token, _, _): isToken(token) && token == token.lowercased()
    case .fcm(let token): isFCMToken(token)
    case .webPush(let endpoint, _), .unifiedPush(let endpoint, _):
        endpoint.description.hasPrefix("https://") && (try? PushEndpoint(endpoint.description)) == endpoint
            && endpoint.description.utf8.count <= PushEndpoint.maxLength
    }
}

func isLowercaseKey(_ text: String) -> Bool { Hex.decode(text, count: 32) != nil }

func isIDList(_ ids: [String], max: Int) -> Bool {
    ids.count <= max && Set(ids).count == ids.count && ids.allSatisfy(isCleanText)
}
