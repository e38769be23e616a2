import Crypto
public import Foundation
public import NIOSSL
import SwiftASN1
import X509

/// The sandbox's TLS identity: a leaf certificate for `localhost` and `127.0.0.1`, and the CA the
/// gateway must trust (`APNS_CA_FILE`). Either generated at start (a fresh CA each run) or read
/// from PEM files an operator provides.
public struct SandboxCertificate: Sendable {
    /// Leaf certificate chain (leaf first), PEM.
    public var chainPEM: String
    /// The leaf's private key, PEM.
    public var privateKeyPEM: String
    /// The CA to trust, PEM (nil when the operator supplied a chain signed by a CA they manage).
    public var caPEM: String?

    public init(chainPEM: String, privateKeyPEM: String, caPEM: String?) {
        self.chainPEM = chainPEM
        self.privateKeyPEM = privateKeyPEM
        self.caPEM = caPEM
    }

    /// A new CA and a leaf it signed, valid for a year, for `hostnames` (DNS names or IPv4/IPv6
    /// literals).
    public static func generate(hostnames: [String] = ["localhost", "127.0.0.1", "::1"], now: Date = Date()) throws -> SandboxCertificate {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("linkstr")
            CommonName("linkstr APNs sandbox CA")
        }
        let validFrom = now.addingTimeInterval(-3600)
        let validUntil = now.addingTimeInterval(365 * 86400)
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(caKey.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(caKey.publicKey))
            },
            issuerPrivateKey: .init(caKey))

        let leafKey = P256.Signing.PrivateKey()
        let names: [GeneralName] = hostnames.map { host in
            if let address = ipAddressBytes(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))) }
            return .dnsName(host)
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil, issuer: caName,
            subject: try DistinguishedName { CommonName(hostnames.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
                AuthorityKeyIdentifier(keyIdentifier: try ca.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: .init(caKey))

        return SandboxCertificate(
            chainPEM: try leaf.serializeAsPEM().pemString + "\n",
            privateKeyPEM: leafKey.pemRepresentation + "\n",
            caPEM: try ca.serializeAsPEM().pemString + "\n")
    }

    /// Reads an operator's certificate chain and key.
    public static func load(chainPath: String, keyPath: String) throws -> SandboxCertificate {
        SandboxCertificate(
            chainPEM: try String(contentsOfFile: chainPath, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8),
            caPEM: nil)
    }

    /// A TLS server configuration that presents this chain with its key.
    public func serverTLSConfiguration() throws -> TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)))
    }

    private static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
