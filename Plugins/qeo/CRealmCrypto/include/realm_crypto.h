// The realm authority's cryptography on OpenSSL's libcrypto: keys, X.509 certificates and
// S/MIME signatures, the material of DDS Security. Every function returns 0 on success, or -1
// with a malloc'd message in *error naming the step and OpenSSL's reason. Strings returned
// through out-parameters are malloc'd; release them with sy_realm_free.
#ifndef SWITCHYARD_REALM_CRYPTO_H
#define SWITCHYARD_REALM_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/// A new EC private key on prime256v1 (the curve DDS Security's ECDSA-SHA256 handshake uses), as
/// PKCS #8 PEM.
int sy_realm_generate_key(char **key_pem, char **error);

/// What a certificate is for: a realm CA (basicConstraints CA:TRUE, keyCertSign/cRLSign), a
/// device (an end entity: digitalSignature, keyAgreement), or a TLS server (a device's usages
/// and extendedKeyUsage serverAuth).
enum { SY_REALM_ROLE_DEVICE = 0, SY_REALM_ROLE_AUTHORITY = 1, SY_REALM_ROLE_SERVER = 2 };

/// A certificate for the key `subject_key_pem` (a private key, PEM) with the distinguished name
/// `subject` ("C=BE\nO=Realm\nCN=..." — one `field=value` per line, in order), valid from a minute
/// ago for `seconds`. Signed by `issuer_key_pem` under `issuer_cert_pem`'s name; when
/// `issuer_cert_pem` is NULL the certificate is self-signed with the subject key. `role` is one
/// of SY_REALM_ROLE_*; `alt_names` (NULL for none) a subjectAltName ("IP:127.0.0.1,DNS:host").
int sy_realm_issue_certificate(
    const char *subject_key_pem, const char *subject, const char *issuer_cert_pem, const char *issuer_key_pem,
    int role, long seconds, uint64_t serial, const char *alt_names, char **certificate_pem, char **error);

/// A device certificate for the public key of a PKCS #10 request (PEM), after checking the
/// request is signed by that key and the key is EC on prime256v1. The request's own subject
/// is ignored: the certificate is named `subject` (lines as above) and signed by the issuer.
int sy_realm_issue_for_request(
    const char *request_pem, const char *subject, const char *issuer_cert_pem, const char *issuer_key_pem, long seconds,
    uint64_t serial, char **certificate_pem, char **error);

/// A PEM certificate's serial number, notAfter (seconds since 1970) and SHA-256 fingerprint of
/// its DER form (lowercase hex).
int sy_realm_certificate_facts(
    const char *certificate_pem, uint64_t *serial, int64_t *not_after, char **fingerprint, char **error);

/// A certificate revocation list (v2, PEM) signed by the issuer: the `count` serials, each
/// revoked at its time (seconds since 1970), valid from now for `seconds` (nextUpdate), with
/// CRL number `number`.
int sy_realm_issue_crl(
    const char *issuer_cert_pem, const char *issuer_key_pem, const uint64_t *serials, const int64_t *revoked_at,
    size_t count, long seconds, uint64_t number, char **crl_pem, char **error);

/// The subject of a PEM certificate as one line in RFC 2253 order ("CN=...,O=...").
int sy_realm_certificate_subject(const char *certificate_pem, char **subject, char **error);

/// `data` signed as S/MIME by the signer's certificate and key, cleartext (multipart/signed,
/// detached, PKCS7_TEXT): what `openssl smime -sign -text` writes and DDS Security verifies for
/// governance and permissions documents.
int sy_realm_smime_sign(
    const char *data, size_t length, const char *signer_cert_pem, const char *signer_key_pem, char **smime,
    char **error);

/// Checks an S/MIME message against a CA certificate; on success returns the signed content
/// (without the text/plain header PKCS7_TEXT adds).
int sy_realm_smime_verify(const char *smime, const char *ca_cert_pem, char **content, char **error);

/// The SHA-256 of `length` bytes as 64 lowercase hex digits and a NUL in `hex`.
int sy_realm_sha256_hex(const char *data, size_t length, char hex[65]);

/// Releases a string this library returned.
void sy_realm_free(char *text);

#endif
