import Foundation
public import WebPush

/// Web Push and UnifiedPush delivery: on when `VAPID_SUBJECT` names the operator's contact.
public struct WebPushSettings: Sendable {
    /// `VAPID_SUBJECT`, a `mailto:` or `https:` contact every push service is given in the VAPID
    /// JWT (`sub`); some refuse messages without one. Nil: both platforms are off.
    public var subject: String?
    /// `VAPID_PRIVATE_KEY` (base64url P-256 scalar or PEM). Nil: the key is generated once and
    /// kept in the database, so every instance signs with the same one.
    public var privateKey: VAPIDKey?
    /// `WEBPUSH_CA_FILE`: extra trust roots for push services (the sandbox's certificate).
    public var caFile: String?
    /// `WEBPUSH_ALLOW_PRIVATE_ENDPOINTS`: endpoints may name loopback, private and other
    /// non-public addresses (the local sandbox, tests). Its own switch: opening relays to a
    /// private network must not open the gateway's POSTs to it.
    public var allowPrivateEndpoints: Bool

    public init(subject: String? = nil, privateKey: VAPIDKey? = nil, caFile: String? = nil, allowPrivateEndpoints: Bool = false) {
        self.subject = subject
        self.privateKey = privateKey
        self.caFile = caFile
        self.allowPrivateEndpoints = allowPrivateEndpoints
    }

    public var enabled: Bool { subject != nil }

    static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> WebPushSettings {
        var settings = WebPushSettings()
        if let subject = env["VAPID_SUBJECT"], !subject.isEmpty {
            guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://"), subject.count <= 256,
                subject.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else {
                throw ConfigurationError(key: "VAPID_SUBJECT", "a mailto: or https: contact, printable ASCII, at most 256 characters")
            }
            settings.subject = subject
        }
        if let text = env["VAPID_PRIVATE_KEY"], !text.isEmpty {
            do {
                settings.privateKey = try VAPIDKey(encoded: text)
            } catch {
                throw ConfigurationError(key: "VAPID_PRIVATE_KEY", error.description)
            }
        }
        settings.caFile = env["WEBPUSH_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        switch env["WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"] {
        case nil, "", "0": settings.allowPrivateEndpoints = false
        case "1": settings.allowPrivateEndpoints = true
        default: throw ConfigurationError(key: "WEBPUSH_ALLOW_PRIVATE_ENDPOINTS", "0 or 1")
        }
        return settings
    }
}
