/// Apple's checks on `POST /3/device/<token>`, as a pure function of the request: path, headers,
/// topic, push type, priority, ids, expiry and payload size (docs/apns.md). Provider
/// token checks and scripted failures are layered on top by `SandboxState`.
public struct APNsRequestValidator: Sendable {
    /// Topics the sandbox accepts; empty accepts any.
    public var allowedTopics: Set<String>

    public static let pushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity", "pushtotalk",
    ]
    public static let maxPayloadBytes = 4096
    public static let maxVoIPPayloadBytes = 5120

    public init(allowedTopics: Set<String> = []) {
        self.allowedTopics = allowedTopics
    }

    /// nil when the request is well formed; otherwise Apple's answer.
    public func check(_ request: SandboxRequest) -> SandboxReply? {
        check(request, token: Self.deviceToken(inPath: request.path), headers: APNsHeaderValues(request.headers))
    }

    /// `check` with the path's token and the APNs headers already read (`deviceToken(inPath:)`,
    /// `APNsHeaderValues`): the sandbox reads each once per push.
    func check(_ request: SandboxRequest, token: Substring?, headers: APNsHeaderValues) -> SandboxReply? {
        guard request.method == "POST" else { return SandboxReply(status: 405, reason: "MethodNotAllowed") }
        guard let token else { return SandboxReply(status: 404, reason: "BadPath") }
        guard !token.isEmpty else { return SandboxReply(status: 400, reason: "MissingDeviceToken") }
        let length = token.utf8.count
        guard length >= 64, length <= 200, length % 2 == 0, token.utf8.allSatisfy(Self.isHexDigit) else {
            return SandboxReply(status: 400, reason: "BadDeviceToken")
        }
        guard !headers.hasDuplicate else { return SandboxReply(status: 400, reason: "DuplicateHeaders") }
        guard let topic = headers.topic, !topic.isEmpty else { return SandboxReply(status: 400, reason: "MissingTopic") }
        // An app's VoIP pushes go to `<bundle id>.voip`, which its key covers as it does the app.
        let appTopic = topic.hasSuffix(".voip") ? String(topic.dropLast(5)) : topic
        if !allowedTopics.isEmpty, !allowedTopics.contains(topic), !allowedTopics.contains(appTopic) {
            return SandboxReply(status: 400, reason: "TopicDisallowed")
        }
        let pushType = headers.pushType ?? "alert"
        guard Self.pushTypes.contains(pushType) else { return SandboxReply(status: 400, reason: "InvalidPushType") }
        if let priority = headers.priority {
            guard priority == "10" || priority == "5" || priority == "1" else { return SandboxReply(status: 400, reason: "BadPriority") }
            if pushType == "background", priority != "5" { return SandboxReply(status: 400, reason: "BadPriority") }
        }
        if let id = headers.id, !Self.isUUID(id) { return SandboxReply(status: 400, reason: "BadMessageId") }
        if let expiration = headers.expiration, Int64(expiration) == nil || expiration.hasPrefix("-") {
            return SandboxReply(status: 400, reason: "BadExpirationDate")
        }
        if let collapseID = headers.collapseID, collapseID.utf8.count > 64 {
            return SandboxReply(status: 400, reason: "BadCollapseId")
        }
        guard !request.body.isEmpty else { return SandboxReply(status: 400, reason: "PayloadEmpty") }
        let limit = pushType == "voip" ? Self.maxVoIPPayloadBytes : Self.maxPayloadBytes
        guard request.body.count <= limit else { return SandboxReply(status: 413, reason: "PayloadTooLarge") }
        return nil
    }

    /// The token in `/3/device/<token>`, or nil when the path is not a device path.
    public static func deviceToken(inPath path: String) -> Substring? {
        // Byte comparisons and scans: `String.hasPrefix` compares by characters, and
        // `Substring.contains(String)` goes through Foundation's string search.
        let prefix = "/3/device/".utf8
        guard path.utf8.starts(with: prefix) else { return nil }
        let token = Substring(path.utf8.dropFirst(prefix.count))
        return token.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ? nil : token
    }

    /// 8-4-4-4-12 hex digits (either case).
    package static func isUUID(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !isHexDigit(byte) {
                return false
            }
            index += 1
        }
        return index == 36
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
