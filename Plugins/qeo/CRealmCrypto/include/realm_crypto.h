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

/// A certificate for the key `subject_key_pem` (a private key, PEM) with the distinguished name
/// `subject` ("C=BE\nO=Realm\nCN=..." — one `field=value` per line, in order), valid from now
/// for `days`. Signed by `issuer_key_pem` under `issuer_cert_pem`'s name; when `issuer_cert_pem`
/// is NULL the certificate is self-signed with the subject key. `is_ca` makes a CA certificate
/// (basicConstraints CA:TRUE, keyCertSign/cRLSign), otherwise an end entity (digitalSignature,
/// keyAgreement).
int sy_realm_issue_certificate(
    const char *subject_key_pem, const char *subject, const char *issuer_cert_pem, const char *issuer_key_pem,
    int is_ca, int days, uint64_t serial, char **certificate_pem, char **error);

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

/// Releases a string this library returned.
void sy_realm_free(char *text);

#endif
