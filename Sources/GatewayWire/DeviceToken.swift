import NostrProtocol

/// Device tokens as the push services issue them, checked before anything is stored.
public enum DeviceToken {
    /// APNs: hex, even length, 64 to 200 characters; stored lowercase.
    public static func validate(_ token: String) throws(RequestBodyError) -> String {
        let lowered = token.lowercased()
        guard (64...200).contains(lowered.utf8.count), lowered.utf8.count % 2 == 0, Hex.decode(lowered) != nil else {
            throw RequestBodyError("device_token must be hex with an even length of 64 to 200 characters")
        }
        return lowered
    }

    static let fcmLengths = 32...1_024
    private static let fcmCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:")

    /// FCM registration tokens: Google documents no format, and they have grown over the years,
    /// so the check is what every token seen has in common (letters, digits, `-`, `_`, `:`) and a
    /// generous length; stored as given (they are case-sensitive).
    public static func validateFCM(_ token: String) throws(RequestBodyError) -> String {
        guard fcmLengths.contains(token.utf8.count), token.allSatisfy({ fcmCharacters.contains($0) }) else {
            throw RequestBodyError(
                "device_token must be an FCM registration token: \(fcmLengths.lowerBound) to \(fcmLengths.upperBound) letters, digits, '-', '_' or ':'"
            )
        }
        return token
    }

    /// A token shortened for logs: never the whole token. An endpoint's host stays readable
    /// (which push service), its path, which addresses the device, does not.
    public static func redacted(_ token: String) -> String {
        if token.hasPrefix("https://"), let endpoint = try? PushEndpoint(token) {
            return endpoint.origin + "/…" + token.suffix(6)
        }
        return "…" + token.suffix(6)
    }
}
