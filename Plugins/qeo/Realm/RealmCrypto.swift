import CRealmCrypto
public import Foundation

/// A failure of the realm authority: what was attempted and why.
public struct RealmError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// Keys, certificates and S/MIME signatures for DDS Security, on OpenSSL's libcrypto.
public enum RealmCrypto {
    /// A certificate's role: a realm CA signs, a device authenticates, a server (the enrollment
    /// endpoint) answers TLS.
    public enum Role: Sendable {
        case authority, device, server

        var code: Int32 {
            switch self {
            case .device: Int32(SY_REALM_ROLE_DEVICE)
            case .authority: Int32(SY_REALM_ROLE_AUTHORITY)
            case .server: Int32(SY_REALM_ROLE_SERVER)
            }
        }
    }

    /// A new prime256v1 private key, PKCS #8 PEM.
    public static func generateKey() throws(RealmError) -> String {
        try call("generating a key") { output, error in sy_realm_generate_key(&output, &error) }
    }

    /// A certificate for `key` named `subject` (fields in order), valid for `seconds`, signed by
    /// the issuer's key under its name, or self-signed when `issuer` is nil; `alternativeNames`
    /// is a subjectAltName value (`IP:127.0.0.1,DNS:localhost`).
    public static func issueCertificate(
        key: String, subject: [(field: String, value: String)], issuer: (certificate: String, key: String)?, role: Role,
        seconds: Int, serial: UInt64, alternativeNames: String? = nil
    ) throws(RealmError) -> String {
        let name = subject.map { "\($0.field)=\($0.value)" }.joined(separator: "\n")
        return try call("issuing a certificate for \(subject.map { "\($0.field)=\($0.value)" }.joined(separator: ","))") {
            output, error in
            sy_realm_issue_certificate(
                key, name, issuer?.certificate, issuer?.key, role.code, seconds, serial, alternativeNames, &output, &error)
        }
    }

    /// A device certificate for the key of a PKCS #10 request (PEM) that its own key signed;
    /// the key must be EC on prime256v1. The request's subject is replaced by `subject`.
    public static func issueCertificate(
        forRequest request: String, subject: [(field: String, value: String)], issuer: (certificate: String, key: String),
        seconds: Int, serial: UInt64
    ) throws(RealmError) -> String {
        let name = subject.map { "\($0.field)=\($0.value)" }.joined(separator: "\n")
        return try call("issuing a certificate for a request") { output, error in
            sy_realm_issue_for_request(request, name, issuer.certificate, issuer.key, seconds, serial, &output, &error)
        }
    }

    /// What the realm needs to know of a certificate it issued.
    public struct CertificateFacts: Sendable, Equatable {
        /// The serial number (what a revocation list names).
        public var serial: UInt64
        /// When it stops being valid.
        public var notAfter: Date
        /// The SHA-256 of its DER form, lowercase hex.
        public var fingerprint: String
    }

    /// A PEM certificate's serial, end of validity and fingerprint.
    public static func facts(ofCertificate certificate: String) throws(RealmError) -> CertificateFacts {
        var serial: UInt64 = 0
        var notAfter: Int64 = 0
        let fingerprint = try call("reading a certificate") { output, error in
            sy_realm_certificate_facts(certificate, &serial, &notAfter, &output, &error)
        }
        return CertificateFacts(serial: serial, notAfter: Date(timeIntervalSince1970: Double(notAfter)), fingerprint: fingerprint)
    }

    /// A revocation list (PEM) of `revoked` serials with their times, signed by the authority,
    /// valid for `seconds`.
    public static func revocationList(
        revoked: [(serial: UInt64, at: Date)], authority: (certificate: String, key: String), seconds: Int, number: UInt64
    ) throws(RealmError) -> String {
        let serials = revoked.map(\.serial)
        let times = revoked.map { Int64($0.at.timeIntervalSince1970) }
        return try call("issuing the revocation list") { output, error in
            sy_realm_issue_crl(authority.certificate, authority.key, serials, times, serials.count, seconds, number, &output, &error)
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

    /// The SHA-256 of `text`'s UTF-8 bytes, lowercase hex.
    public static func sha256(_ text: String) -> String {
        var hex = [CChar](repeating: 0, count: 65)
        let bytes = Array(text.utf8)
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { sy_realm_sha256_hex($0.baseAddress, $0.count, &hex) }
        }
        precondition(status == 0, "SHA-256 is always available in libcrypto")
        return String(decoding: hex.prefix(64).map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
