import Foundation
import GatewayWire
import NostrProtocol

/// The apps the gateway pushes for, from `APPS_FILE` (or `APNS_APPS_FILE`, which it supersedes):
/// a JSON list of
/// `{"topic", "key_id"?, "team_id"?, "key_path"?, "alerts"?: {"<notification type>": {"title", "body"}}}`.
///
/// - `topic` names the app on every platform (the bundle id devices register with).
/// - `key_id`, `team_id` and `key_path` are its APNs token key; all three or none in `APPS_FILE`
///   (an app only on Android or the web has none), all three in `APNS_APPS_FILE`.
/// - `alerts` replaces the generic text for the types it names, on every platform.
struct AppsFile: Sendable, Equatable {
    /// The apps with an APNs key.
    var apnsApps: [APNsApp] = []
    /// Every app's topic, in the file's order.
    var topics: [String] = []
    var alerts = AlertTextCatalog()

    /// Reads whichever file is set; nil when neither is. Both set is refused: one list, one truth.
    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> AppsFile? {
        let neutral = env["APPS_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let apnsOnly = env["APNS_APPS_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        if neutral != nil, apnsOnly != nil {
            throw ConfigurationError(key: "APPS_FILE", "set APPS_FILE or APNS_APPS_FILE, not both (APPS_FILE takes the same entries)")
        }
        if let neutral { return try load(neutral, key: "APPS_FILE", requireAPNsKey: false) }
        if let apnsOnly { return try load(apnsOnly, key: "APNS_APPS_FILE", requireAPNsKey: true) }
        return nil
    }

    static let fields: Set<String> = ["topic", "key_id", "team_id", "key_path", "alerts"]

    static func load(_ path: String, key: String, requireAPNsKey: Bool) throws(ConfigurationError) -> AppsFile {
        func fail(_ why: String) -> ConfigurationError { ConfigurationError(key: key, why) }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw fail("cannot read \(path)") }
        guard case .array(let items)? = try? JSONValue(parsing: text) else { throw fail("must be a JSON array") }
        var file = AppsFile()
        for (index, item) in items.enumerated() {
            guard let fields = item.objectValue else { throw fail("entry \(index) must be an object") }
            // A misspelt key field would otherwise make an app silently keyless.
            if let unknown = fields.keys.sorted().first(where: { !Self.fields.contains($0) }) {
                throw fail("entry \(index): unknown field \(unknown.prefix(40)) (one of \(Self.fields.sorted().joined(separator: ", ")))")
            }
            for name in ["topic", "key_id", "team_id", "key_path"] where fields[name] != nil && fields[name]?.stringValue == nil {
                throw fail("entry \(index): \(name) must be a string")
            }
            guard let topic = item["topic"]?.stringValue, !topic.isEmpty else { throw fail("entry \(index) needs a topic") }
            guard !file.topics.contains(topic) else { throw fail("entry \(index): topic \(topic) is listed twice") }
            file.topics.append(topic)
            let keyFields = [item["key_id"], item["team_id"], item["key_path"]].map { $0?.stringValue }
            if keyFields.allSatisfy({ $0 != nil }), let keyID = keyFields[0], let teamID = keyFields[1], let keyPath = keyFields[2] {
                guard let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
                    throw fail("entry \(index): cannot read \(keyPath)")
                }
                file.apnsApps.append(APNsApp(topic: topic, keyID: keyID, teamID: teamID, privateKeyPEM: pem))
            } else if requireAPNsKey || keyFields.contains(where: { $0 != nil }) {
                throw fail("entry \(index) needs topic, key_id, team_id and key_path\(requireAPNsKey ? "" : " (or only topic)")")
            }
            if let alerts = item["alerts"] {
                file.alerts.byTopic[topic] = try parseAlerts(alerts, entry: index, fail: fail)
            }
        }
        return file
    }

    private static func parseAlerts(_ json: JSONValue, entry index: Int, fail: (String) -> ConfigurationError) throws(ConfigurationError)
        -> [NotificationType: AlertText]
    {
        guard let fields = json.objectValue else { throw fail("entry \(index): alerts must be an object of notification types") }
        var texts: [NotificationType: AlertText] = [:]
        for (name, value) in fields {
            guard let type = NotificationType(rawValue: name) else {
                let known = NotificationType.allCases.map(\.rawValue).joined(separator: ", ")
                throw fail("entry \(index): alerts: unknown type \(name.prefix(40)) (one of \(known))")
            }
            guard let title = value["title"]?.stringValue, let body = value["body"]?.stringValue else {
                throw fail("entry \(index): alerts.\(name) needs a title and a body")
            }
            for text in [title, body] {
                guard !text.isEmpty, text.utf8.count <= AlertText.maxBytes,
                    !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else {
                    throw fail(
                        "entry \(index): alerts.\(name): a title or body is 1 to \(AlertText.maxBytes) bytes without control characters")
                }
                // One emoji is at most a few dozen bytes; many could push the payload past 4 KB.
                guard text.components(separatedBy: "{emoji}").count <= 2 else {
                    throw fail("entry \(index): alerts.\(name): {emoji} at most once in a title or body")
                }
            }
            texts[type] = AlertText(title: title, body: body)
        }
        return texts
    }
}
