import Foundation
import NostrProtocol

/// A Google service account, as the JSON key file the Firebase console downloads: what the
/// gateway signs its OAuth assertions with and which project it sends for.
public struct FCMServiceAccount: Sendable, Equatable, CustomStringConvertible {
    public var projectID: String
    public var clientEmail: String
    /// Named in the assertion's `kid`, so Google can pick the key without trying each.
    public var privateKeyID: String?
    /// The RSA private key, PEM (PKCS#8, as Google issues it).
    public var privateKeyPEM: String
    /// Where the assertion is exchanged for an access token.
    public var tokenURI: String

    public init(projectID: String, clientEmail: String, privateKeyID: String? = nil, privateKeyPEM: String, tokenURI: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.tokenURI = tokenURI
    }

    /// Never the key: an account in a log line must not hand it out.
    public var description: String { "FCMServiceAccount(project: \(projectID), client: \(clientEmail))" }

    /// Google's token endpoint, for a file that names none.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// Parses a key file. The message of the error says which field is wrong, never its value
    /// (the file holds a private key).
    public init(json text: String) throws(FCMServiceAccountError) {
        guard let json = try? JSONValue(parsing: text), json.objectValue != nil else {
            throw FCMServiceAccountError("not a JSON object (expected a service account key file)")
        }
        if let type = json["type"]?.stringValue, type != "service_account" {
            throw FCMServiceAccountError("type is \"\(type.prefix(40))\", expected \"service_account\"")
        }
        func field(_ name: String) throws(FCMServiceAccountError) -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else { throw FCMServiceAccountError("\(name) is missing") }
            return value
        }
        let projectID = try field("project_id")
        // Project ids are 6 to 30 lowercase letters, digits and hyphens; the id goes into a URL path.
        guard projectID.count <= 64, projectID.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
            throw FCMServiceAccountError("project_id must be lowercase letters, digits and '-'")
        }
        let tokenURI = json["token_uri"]?.stringValue ?? Self.googleTokenURI
        guard let url = URL(string: tokenURI), url.scheme == "https", url.host != nil else {
            throw FCMServiceAccountError("token_uri must be an https URL")
        }
        self.init(
            projectID: projectID, clientEmail: try field("client_email"), privateKeyID: json["private_key_id"]?.stringValue,
            privateKeyPEM: try field("private_key"), tokenURI: tokenURI)
    }
}
