import Crypto
package import Foundation
import NostrProtocol

/// The console's sign-in: a browser cannot send `Authorization: Bearer`, so a correct
/// `ADMIN_TOKEN` typed into the sign-in form earns a cookie instead. The cookie holds no secret:
/// it is an expiry and an HMAC of that expiry keyed with the admin token, so it cannot be forged
/// without the token, it ends by itself, and changing `ADMIN_TOKEN` ends every session at once.
package struct AdminSession: Sendable {
    package static let cookieName = "linkstr_admin"
    /// How long a sign-in lasts.
    package static let lifetime: TimeInterval = 12 * 3600

    private let key: SymmetricKey
    /// Sent only over HTTPS when the gateway's public URL is HTTPS.
    private let secure: Bool

    package init(adminToken: String, secure: Bool) {
        self.key = SymmetricKey(data: Array(adminToken.utf8))
        self.secure = secure
    }

    /// The `Set-Cookie` value for a sign-in at `now`.
    package func cookie(now: Date) -> String {
        let expiry = Int64(now.timeIntervalSince1970 + Self.lifetime)
        return "\(Self.cookieName)=\(expiry).\(signature(expiry)); Max-Age=\(Int(Self.lifetime)); " + attributes
    }

    /// The `Set-Cookie` value that signs out.
    package var clearingCookie: String {
        "\(Self.cookieName)=; Max-Age=0; " + attributes
    }

    /// Whether the request's `Cookie` header carries a session that is this token's and unexpired.
    package func accepts(cookieHeader: String?, now: Date) -> Bool {
        guard let cookieHeader else { return false }
        for pair in cookieHeader.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " }
            guard trimmed.hasPrefix(Self.cookieName + "=") else { continue }
            let value = trimmed.dropFirst(Self.cookieName.count + 1)
            let parts = value.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, let expiry = Int64(parts[0]), Double(expiry) > now.timeIntervalSince1970,
                Double(expiry) <= now.timeIntervalSince1970 + Self.lifetime + 60
            else { continue }
            if GatewayAPI.constantTimeEquals(String(parts[1]), signature(expiry)) { return true }
        }
        return false
    }

    private var attributes: String {
        "Path=/admin; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    private func signature(_ expiry: Int64) -> String {
        Hex.encode(Array(HMAC<SHA256>.authenticationCode(for: Array("linkstr-push admin session \(expiry)".utf8), using: key)))
    }
}
