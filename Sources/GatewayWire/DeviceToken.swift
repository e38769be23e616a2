import NostrProtocol

/// APNs device tokens: hex, even length, 64 to 200 characters; stored lowercase.
public enum DeviceToken {
    public static func validate(_ token: String) throws(RequestBodyError) -> String {
        let lowered = token.lowercased()
        guard (64...200).contains(lowered.utf8.count), lowered.utf8.count % 2 == 0, Hex.decode(lowered) != nil else {
            throw RequestBodyError("device_token must be hex with an even length of 64 to 200 characters")
        }
        return lowered
    }

    /// A token shortened for logs: never the whole token.
    public static func redacted(_ token: String) -> String { "…" + token.suffix(6) }
}
