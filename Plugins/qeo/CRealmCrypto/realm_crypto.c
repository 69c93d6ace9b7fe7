#include "realm_crypto.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Records `step` and the first OpenSSL error in *error; always returns -1.
static int fail(char **error, const char *step) {
    unsigned long code = ERR_get_error();
    char reason[256] = "no further detail";
    if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
    ERR_clear_error();
    size_t size = strlen(step) + strlen(reason) + 3;
    if (error != NULL && (*error = malloc(size)) != NULL) snprintf(*error, size, "%s: %s", step, reason);
    return -1;
}

// The bytes written to a memory BIO as a NUL-terminated malloc'd string.
static char *bio_string(BIO *bio) {
    char *bytes = NULL;
    long length = BIO_get_mem_data(bio, &bytes);
    if (length < 0) return NULL;
    char *copy = malloc((size_t)length + 1);
    if (copy == NULL) return NULL;
    memcpy(copy, bytes, (size_t)length);
    copy[length] = '\0';
    return copy;
}

// Refuses encrypted keys instead of prompting on the terminal.
static int no_passphrase(char *buffer, int size, int writing, void *context) {
    (void)buffer;
    (void)size;
    (void)writing;
    (void)context;
    return 0;
}

static EVP_PKEY *read_key(const char *pem) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    BIO_free(bio);
    return key;
}

static X509 *read_certificate(const char *pem) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (bio == NULL) return NULL;
    X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return certificate;
}

int sy_realm_generate_key(char **key_pem, char **error) {
    ERR_clear_error();
    EVP_PKEY *key = EVP_EC_gen("prime256v1");
    if (key == NULL) return fail(error, "generating an EC key on prime256v1");
    BIO *bio = BIO_new(BIO_s_mem());
    int status = -1;
    if (bio == NULL || !PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)) {
        status = fail(error, "writing the key as PEM");
    } else if ((*key_pem = bio_string(bio)) == NULL) {
        status = fail(error, "copying the key");
    } else {
        status = 0;
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    return status;
}

// Parses "field=value" lines into a name, in order.
static X509_NAME *parse_name(const char *text, char **error) {
    X509_NAME *name = X509_NAME_new();
    char *copy = strdup(text);
    if (name == NULL || copy == NULL) {
        X509_NAME_free(name);
        free(copy);
        fail(error, "allocating a name");
        return NULL;
    }
    char *saved = NULL;
    for (char *line = strtok_r(copy, "\n", &saved); line != NULL; line = strtok_r(NULL, "\n", &saved)) {
        char *equals = strchr(line, '=');
        if (equals == NULL) {
            X509_NAME_free(name);
            free(copy);
            fail(error, "a name field without '='");
            return NULL;
        }
        *equals = '\0';
        if (!X509_NAME_add_entry_by_txt(name, line, MBSTRING_UTF8, (const unsigned char *)(equals + 1), -1, -1, 0)) {
            X509_NAME_free(name);
            free(copy);
            fail(error, "adding a name field");
            return NULL;
        }
    }
    free(copy);
    return name;
}

static int add_extension(X509 *certificate, X509V3_CTX *context, int nid, const char *value) {
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, context, nid, value);
    if (extension == NULL) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

// Issues a certificate for `subject_public` named by the `subject` lines. Signed by `issuer_key`
// under `issuer`'s name, or self-signed with `self_key` when `issuer` is NULL. `alt_names` (may be
// NULL) is a subjectAltName value such as "IP:127.0.0.1,DNS:localhost".
static int issue(
    EVP_PKEY *subject_public, EVP_PKEY *self_key, const char *subject, X509 *issuer, EVP_PKEY *issuer_key, int role,
    long seconds, uint64_t serial, const char *alt_names, char **certificate_pem, char **error) {
    int status = -1;
    X509_NAME *name = NULL;
    X509 *certificate = X509_new();
    BIO *bio = NULL;
    if (issuer != NULL && X509_check_private_key(issuer, issuer_key) != 1) {
        fail(error, "the issuer key does not belong to the issuer certificate");
        goto done;
    }
    if ((name = parse_name(subject, error)) == NULL) goto done;
    if (certificate == NULL || !X509_set_version(certificate, X509_VERSION_3)
        || !ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial)
        || X509_gmtime_adj(X509_getm_notBefore(certificate), -60) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(certificate), seconds) == NULL
        || !X509_set_subject_name(certificate, name)
        || !X509_set_issuer_name(certificate, issuer != NULL ? X509_get_subject_name(issuer) : name)
        || !X509_set_pubkey(certificate, subject_public)) {
        fail(error, "filling the certificate");
        goto done;
    }
    X509V3_CTX context;
    X509V3_set_ctx(&context, issuer != NULL ? issuer : certificate, certificate, NULL, NULL, 0);
    int extensions;
    switch (role) {
    case SY_REALM_ROLE_AUTHORITY:
        extensions = add_extension(certificate, &context, NID_basic_constraints, "critical,CA:TRUE")
            && add_extension(certificate, &context, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        break;
    case SY_REALM_ROLE_SERVER:
        extensions = add_extension(certificate, &context, NID_basic_constraints, "critical,CA:FALSE")
            && add_extension(certificate, &context, NID_key_usage, "critical,digitalSignature,keyAgreement")
            && add_extension(certificate, &context, NID_ext_key_usage, "serverAuth");
        break;
    default:
        extensions = add_extension(certificate, &context, NID_basic_constraints, "critical,CA:FALSE")
            && add_extension(certificate, &context, NID_key_usage, "critical,digitalSignature,keyAgreement");
    }
    if (!extensions || !add_extension(certificate, &context, NID_subject_key_identifier, "hash")
        || (issuer != NULL && !add_extension(certificate, &context, NID_authority_key_identifier, "keyid:always"))
        || (alt_names != NULL && !add_extension(certificate, &context, NID_subject_alt_name, alt_names))) {
        fail(error, "adding the certificate's extensions");
        goto done;
    }
    if (!X509_sign(certificate, issuer_key != NULL ? issuer_key : self_key, EVP_sha256())) {
        fail(error, "signing the certificate");
        goto done;
    }
    if ((bio = BIO_new(BIO_s_mem())) == NULL || !PEM_write_bio_X509(bio, certificate)
        || (*certificate_pem = bio_string(bio)) == NULL) {
        fail(error, "writing the certificate as PEM");
        goto done;
    }
    status = 0;
done:
    BIO_free(bio);
    X509_free(certificate);
    X509_NAME_free(name);
    return status;
}

// Reads the issuer's certificate and key when given; 0 on success.
static int read_issuer(const char *cert_pem, const char *key_pem, X509 **issuer, EVP_PKEY **key, char **error) {
    if (cert_pem == NULL) return 0;
    if ((*issuer = read_certificate(cert_pem)) == NULL) return fail(error, "reading the issuer certificate");
    if ((*key = read_key(key_pem)) == NULL) return fail(error, "reading the issuer key");
    return 0;
}

int sy_realm_issue_certificate(
    const char *subject_key_pem, const char *subject, const char *issuer_cert_pem, const char *issuer_key_pem,
    int role, long seconds, uint64_t serial, const char *alt_names, char **certificate_pem, char **error) {
    ERR_clear_error();
    int status = -1;
    X509 *issuer = NULL;
    EVP_PKEY *issuer_key = NULL;
    EVP_PKEY *subject_key = read_key(subject_key_pem);
    if (subject_key == NULL) {
        fail(error, "reading the subject key");
    } else if (read_issuer(issuer_cert_pem, issuer_key_pem, &issuer, &issuer_key, error) == 0) {
        status = issue(
            subject_key, subject_key, subject, issuer, issuer_key, role, seconds, serial, alt_names, certificate_pem, error);
    }
    X509_free(issuer);
    EVP_PKEY_free(issuer_key);
    EVP_PKEY_free(subject_key);
    return status;
}

int sy_realm_issue_for_request(
    const char *request_pem, const char *subject, const char *issuer_cert_pem, const char *issuer_key_pem, long seconds,
    uint64_t serial, char **certificate_pem, char **error) {
    ERR_clear_error();
    int status = -1;
    X509 *issuer = NULL;
    EVP_PKEY *issuer_key = NULL;
    EVP_PKEY *requested = NULL;
    BIO *bio = BIO_new_mem_buf(request_pem, -1);
    X509_REQ *request = bio != NULL ? PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL) : NULL;
    if (request == NULL) {
        fail(error, "reading the certificate request (PEM, PKCS #10)");
        goto done;
    }
    if ((requested = X509_REQ_get_pubkey(request)) == NULL) {
        fail(error, "reading the request's public key");
        goto done;
    }
    if (X509_REQ_verify(request, requested) != 1) {
        fail(error, "the request is not signed by its own key");
        goto done;
    }
    char curve[64] = "";
    size_t length = 0;
    if (EVP_PKEY_get_base_id(requested) != EVP_PKEY_EC
        || !EVP_PKEY_get_utf8_string_param(requested, "group", curve, sizeof curve, &length)
        || strcmp(curve, "prime256v1") != 0) {
        fail(error, "the request's key is not an EC key on prime256v1 (P-256), which the realm's handshakes use");
        goto done;
    }
    if (read_issuer(issuer_cert_pem, issuer_key_pem, &issuer, &issuer_key, error) != 0) goto done;
    status = issue(
        requested, NULL, subject, issuer, issuer_key, SY_REALM_ROLE_DEVICE, seconds, serial, NULL, certificate_pem, error);
done:
    X509_free(issuer);
    EVP_PKEY_free(issuer_key);
    EVP_PKEY_free(requested);
    X509_REQ_free(request);
    BIO_free(bio);
    return status;
}

int sy_realm_certificate_facts(
    const char *certificate_pem, uint64_t *serial, int64_t *not_after, char **fingerprint, char **error) {
    ERR_clear_error();
    X509 *certificate = read_certificate(certificate_pem);
    if (certificate == NULL) return fail(error, "reading the certificate");
    int status = -1;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    struct tm end;
    if (!ASN1_INTEGER_get_uint64(serial, X509_get0_serialNumber(certificate))) {
        fail(error, "reading the serial number");
    } else if (!ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &end)) {
        fail(error, "reading notAfter");
    } else if (!X509_digest(certificate, EVP_sha256(), digest, &digest_length)
               || (*fingerprint = malloc(digest_length * 2 + 1)) == NULL) {
        fail(error, "computing the SHA-256 fingerprint");
    } else {
        for (unsigned int index = 0; index < digest_length; index++) {
            snprintf(*fingerprint + index * 2, 3, "%02x", digest[index]);
        }
        *not_after = (int64_t)timegm(&end);
        status = 0;
    }
    X509_free(certificate);
    return status;
}

int sy_realm_issue_crl(
    const char *issuer_cert_pem, const char *issuer_key_pem, const uint64_t *serials, const int64_t *revoked_at,
    size_t count, long seconds, uint64_t number, char **crl_pem, char **error) {
    ERR_clear_error();
    int status = -1;
    X509 *issuer = NULL;
    EVP_PKEY *key = NULL;
    X509_CRL *crl = X509_CRL_new();
    ASN1_TIME *now = ASN1_TIME_new();
    ASN1_TIME *next = ASN1_TIME_new();
    ASN1_INTEGER *crl_number = ASN1_INTEGER_new();
    BIO *bio = NULL;
    if (issuer_cert_pem == NULL || read_issuer(issuer_cert_pem, issuer_key_pem, &issuer, &key, error) != 0) goto done;
    if (X509_check_private_key(issuer, key) != 1) {
        fail(error, "the issuer key does not belong to the issuer certificate");
        goto done;
    }
    if (crl == NULL || now == NULL || next == NULL || crl_number == NULL || !X509_CRL_set_version(crl, X509_CRL_VERSION_2)
        || !X509_CRL_set_issuer_name(crl, X509_get_subject_name(issuer)) || X509_gmtime_adj(now, 0) == NULL
        || X509_gmtime_adj(next, seconds) == NULL || !X509_CRL_set1_lastUpdate(crl, now)
        || !X509_CRL_set1_nextUpdate(crl, next) || !ASN1_INTEGER_set_uint64(crl_number, number)
        || !X509_CRL_add1_ext_i2d(crl, NID_crl_number, crl_number, 0, 0)) {
        fail(error, "filling the revocation list");
        goto done;
    }
    for (size_t index = 0; index < count; index++) {
        X509_REVOKED *entry = X509_REVOKED_new();
        ASN1_INTEGER *serial = ASN1_INTEGER_new();
        ASN1_TIME *when = ASN1_TIME_new();
        int added = entry != NULL && serial != NULL && when != NULL && ASN1_INTEGER_set_uint64(serial, serials[index])
            && X509_REVOKED_set_serialNumber(entry, serial) && ASN1_TIME_set(when, (time_t)revoked_at[index]) != NULL
            && X509_REVOKED_set_revocationDate(entry, when) && X509_CRL_add0_revoked(crl, entry);
        ASN1_INTEGER_free(serial);
        ASN1_TIME_free(when);
        if (!added) {
            X509_REVOKED_free(entry);
            fail(error, "adding a revoked certificate");
            goto done;
        }
    }
    if (!X509_CRL_sort(crl) || !X509_CRL_sign(crl, key, EVP_sha256())) {
        fail(error, "signing the revocation list");
        goto done;
    }
    if ((bio = BIO_new(BIO_s_mem())) == NULL || !PEM_write_bio_X509_CRL(bio, crl) || (*crl_pem = bio_string(bio)) == NULL) {
        fail(error, "writing the revocation list as PEM");
        goto done;
    }
    status = 0;
done:
    BIO_free(bio);
    ASN1_INTEGER_free(crl_number);
    ASN1_TIME_free(next);
    ASN1_TIME_free(now);
    X509_CRL_free(crl);
    EVP_PKEY_free(key);
    X509_free(issuer);
    return status;
}

int sy_realm_certificate_subject(const char *certificate_pem, char **subject, char **error) {
    ERR_clear_error();
    X509 *certificate = read_certificate(certificate_pem);
    if (certificate == NULL) return fail(error, "reading the certificate");
    BIO *bio = BIO_new(BIO_s_mem());
    int status = -1;
    if (bio == NULL || X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, XN_FLAG_RFC2253) < 0
        || (*subject = bio_string(bio)) == NULL) {
        status = fail(error, "printing the subject");
    } else {
        status = 0;
    }
    BIO_free(bio);
    X509_free(certificate);
    return status;
}

int sy_realm_smime_sign(
    const char *data, size_t length, const char *signer_cert_pem, const char *signer_key_pem, char **smime,
    char **error) {
    ERR_clear_error();
    if (length > INT_MAX) return fail(error, "a document over 2 GiB");
    int status = -1;
    X509 *signer = read_certificate(signer_cert_pem);
    EVP_PKEY *key = read_key(signer_key_pem);
    BIO *content = BIO_new_mem_buf(data, (int)length);
    BIO *output = BIO_new(BIO_s_mem());
    PKCS7 *signature = NULL;
    if (signer == NULL || key == NULL) {
        fail(error, signer == NULL ? "reading the signer certificate" : "reading the signer key");
        goto done;
    }
    int flags = PKCS7_DETACHED | PKCS7_TEXT | PKCS7_STREAM;
    if (content == NULL || output == NULL || (signature = PKCS7_sign(signer, key, NULL, content, flags)) == NULL) {
        fail(error, "signing");
        goto done;
    }
    if (!SMIME_write_PKCS7(output, signature, content, flags) || (*smime = bio_string(output)) == NULL) {
        fail(error, "writing the S/MIME message");
        goto done;
    }
    status = 0;
done:
    PKCS7_free(signature);
    BIO_free(output);
    BIO_free(content);
    EVP_PKEY_free(key);
    X509_free(signer);
    return status;
}

int sy_realm_smime_verify(const char *smime, const char *ca_cert_pem, char **content, char **error) {
    ERR_clear_error();
    int status = -1;
    BIO *input = BIO_new_mem_buf(smime, -1);
    BIO *detached = NULL;
    BIO *output = BIO_new(BIO_s_mem());
    X509 *ca = read_certificate(ca_cert_pem);
    X509_STORE *store = X509_STORE_new();
    PKCS7 *signature = NULL;
    if (ca == NULL || store == NULL || !X509_STORE_add_cert(store, ca)) {
        fail(error, "reading the CA certificate");
        goto done;
    }
    if (input == NULL || output == NULL || (signature = SMIME_read_PKCS7(input, &detached)) == NULL) {
        fail(error, "reading the S/MIME message");
        goto done;
    }
    if (PKCS7_verify(signature, NULL, store, detached, output, PKCS7_TEXT) != 1) {
        fail(error, "verifying the signature");
        goto done;
    }
    if ((*content = bio_string(output)) == NULL) {
        fail(error, "copying the content");
        goto done;
    }
    status = 0;
done:
    PKCS7_free(signature);
    X509_STORE_free(store);
    X509_free(ca);
    BIO_free(output);
    BIO_free(detached);
    BIO_free(input);
    return status;
}

int sy_realm_sha256_hex(const char *data, size_t length, char hex[65]) {
    unsigned char digest[32];
    unsigned int digest_length = 0;
    if (!EVP_Digest(data, length, digest, &digest_length, EVP_sha256(), NULL) || digest_length != 32) return -1;
    for (unsigned int index = 0; index < 32; index++) snprintf(hex + index * 2, 3, "%02x", digest[index]);
    return 0;
}

void sy_realm_free(char *text) { free(text); }
