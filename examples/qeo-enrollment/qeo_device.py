#!/usr/bin/env python3
"""A Qeo device's side of a realm's enrollment endpoint (the example's device and the tests').

  qeo_device.py enroll URL CODE CA_SHA256 DIR   fetch the CA, check its fingerprint, make a
                                                P-256 key and a PKCS #10 request, exchange the
                                                code; write DIR as a device directory
  qeo_device.py renew URL DIR                   fresh permissions, the device certificate as
                                                the TLS client certificate
  qeo_device.py changes URL DIR SINCE           the wake feed after cursor SINCE

Prints one JSON line: {"status": HTTP status, "body": the answer (JSON)}; exits 0 when it got
an answer, whatever its status.
"""
import hashlib
import http.client
import json
import os
import ssl
import sys
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def connect(url, context):
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=20)


def request(url, context, method, path, body=None):
    connection = connect(url, context)
    headers = {"content-type": "application/json"} if body is not None else {}
    connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def trusting(ca_file, directory=None):
    context = ssl.create_default_context(cafile=ca_file)
    if directory is not None:
        context.load_cert_chain(os.path.join(directory, "device.pem"), os.path.join(directory, "device.key"))
    return context


def report(status, data):
    try:
        body = json.loads(data)
    except ValueError:
        body = data.decode("utf-8", "replace")
    print(json.dumps({"status": status, "body": body}), flush=True)


def enroll(url, code, fingerprint, directory):
    # Trust on first use, pinned: the CA is fetched without verification and accepted only
    # when its fingerprint is the one that came with the code.
    blind = ssl.create_default_context()
    blind.check_hostname = False
    blind.verify_mode = ssl.CERT_NONE
    status, pem = request(url, blind, "GET", "/ca")
    if status != 200:
        return report(status, pem)
    ca = x509.load_pem_x509_certificate(pem)
    seen = hashlib.sha256(ca.public_bytes(serialization.Encoding.DER)).hexdigest()
    if seen != fingerprint:
        return report(0, json.dumps({"error": "fingerprint", "message": f"CA {seen} is not {fingerprint}"}).encode())
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "ca.pem"), "wb") as file:
        file.write(pem)
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "enrolling device")]))
        .sign(key, hashes.SHA256())
    )
    status, data = request(
        url, trusting(os.path.join(directory, "ca.pem")), "POST", "/enroll",
        {"code": code, "csr": csr.public_bytes(serialization.Encoding.PEM).decode()},
    )
    if status == 200:
        key_path = os.path.join(directory, "device.key")
        descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        write_credentials(directory, json.loads(data))
    report(status, data)


def write_credentials(directory, answer):
    files = {"device.pem": "certificate", "ca.pem": "ca", "governance.p7s": "governance", "permissions.p7s": "permissions", "crl.pem": "crl"}
    for name, field in files.items():
        if field in answer:
            with open(os.path.join(directory, name), "w") as file:
                file.write(answer[field])
    identity = {name: answer[name] for name in ("realm", "user", "device")}
    identity["domain"] = int(answer["domain"])
    with open(os.path.join(directory, "device.json"), "w") as file:
        json.dump(identity, file)


def renew(url, directory):
    status, data = request(url, trusting(os.path.join(directory, "ca.pem"), directory), "POST", "/renew", {})
    if status == 200:
        write_credentials(directory, json.loads(data))
    report(status, data)


def changes(url, directory, since):
    status, data = request(url, trusting(os.path.join(directory, "ca.pem"), directory), "GET", f"/wake/changes?since={int(since)}")
    report(status, data)


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"enroll": enroll, "renew": renew, "changes": changes}[command](*arguments)
