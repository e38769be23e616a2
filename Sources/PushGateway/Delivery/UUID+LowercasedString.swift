package import Foundation
import NostrProtocol

extension UUID {
    /// The lowercase 8-4-4-4-12 form (RFC 9562 §4), as a push's `apns-id` and FCM message id
    /// carry it, written straight from the bytes (`Hex.uuidForm`).
    package var lowercasedString: String {
        withUnsafeBytes(of: uuid) { Hex.uuidForm($0) }
    }
}
