import CRealmCrypto

/// A failure of the realm authority: what was attempted and why.
public struct RealmError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// Keys, certificates and S/MIME signatures for DDS Security, on OpenSSL's libcrypto.
public enum RealmCrypto {
    /// A certificate's role: a realm CA signs, a device authenticates.
    public enum Role: Sendable {
        case authority, device
    }

    /// A new prime256v1 private key, PKCS #8 PEM.
    public static func generateKey() throws(RealmError) -> String {
        try call("generating a key") { output, error in sy_realm_generate_key(&output, &error) }
    }

    /// A certificate for `key` named `subject` (fields in order), valid for `days`, signed by the
    /// issuer's key under its name, or self-signed when `issuer` is nil.
    public static func issueCertificate(
        key: String, subject: [(field: String, value: String)], issuer: (certificate: String, key: String)?, role: Role,
        days: Int, serial: UInt64
    ) throws(RealmError) -> String {
        let name = subject.map { "\($0.field)=\($0.value)" }.joined(separator: "\n")
        return try call("issuing a certificate for \(subject.map { "\($0.field)=\($0.value)" }.joined(separator: ","))") {
            output, error in
            sy_realm_issue_certificate(
                key, name, issuer?.certificate, issuer?.key, role == .authority ? 1 : 0, Int32(days), serial, &output, &error)
        }
    }

    /// A certificate's subject as an RFC 2253 line (`CN=…,O=…`).
    public static func subject(ofCertificate certificate: String) throws(RealmError) -> String {
        try call("reading a certificate's subject") { output, error in sy_realm_certificate_subject(certificate, &output, &error) }
    }

    /// `document` as an S/MIME message signed by the authority (detached, text), the form DDS
    /// Security reads governance and permissions documents in.
    public static func sign(_ document: String, certificate: String, key: String) throws(RealmError) -> String {
        let bytes = Array(document.utf8)
        return try call("signing a document") { output, error in
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { characters in
                    sy_realm_smime_sign(characters.baseAddress, characters.count, certificate, key, &output, &error)
                }
            }
        }
    }

    /// The content of an S/MIME message after checking its signature chains to `authority`, with
    /// the line ends it had before signing (text signing canonicalises them to CRLF).
    public static func verify(_ message: String, authority: String) throws(RealmError) -> String {
        let content = try call("verifying a signed document") { output, error in
            sy_realm_smime_verify(message, authority, &output, &error)
        }
        return content.replacing("\r\n", with: "\n")
    }

    private static func call(
        _ what: String, _ body: (inout UnsafeMutablePointer<CChar>?, inout UnsafeMutablePointer<CChar>?) -> Int32
    ) throws(RealmError) -> String {
        var output: UnsafeMutablePointer<CChar>?
        var error: UnsafeMutablePointer<CChar>?
        let status = body(&output, &error)
        defer {
            sy_realm_free(output)
            sy_realm_free(error)
        }
        guard status == 0, let output else {
            throw RealmError(error.map { String(cString: $0) } ?? "\(what) failed")
        }
        return String(cString: output)
    }
}
