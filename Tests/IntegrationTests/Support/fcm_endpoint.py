"""A local stand-in for Google's OAuth2 token endpoint and FCM HTTP v1, for the push plugin's tests.

It checks what it receives as strictly as the real services do:
- POST /token: form-encoded grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and an
  RS256 assertion whose signature is verified with the service account's public key (by the
  openssl command, independent of the code that signed it), with iss, scope, aud, iat and exp
  (exp - iat <= 3600, not expired) checked; answers {"access_token", "expires_in", "token_type"}.
- POST /v1/projects/{project}/messages:send: a bearer token it issued, the project, the FCM v1
  body shape (exactly one target, string-only data, no reserved keys, 4096-byte payload, no
  unknown fields); FCM-shaped errors otherwise.
- Scripted answers for the next sends: POST /control/script with a JSON list of
  {"status": 404, "errorCode": "UNREGISTERED", "retry_after": "1"}; tokens starting with "dead-"
  are always UNREGISTERED.
- GET /control/log: every request it saw, with its verdict, arrival time and traceparent header.

Usage: fcm_endpoint.py PORT_FILE PUBLIC_KEY_PEM CLIENT_EMAIL AUDIENCE PROJECT
Writes "port pid" to PORT_FILE once listening.
"""

import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

PORT_FILE, PUBLIC_KEY, CLIENT_EMAIL, AUDIENCE, PROJECT = sys.argv[1:6]
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
MESSAGE_FIELDS = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition", "fid"}
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

lock = threading.Lock()
issued = set()
script = []
log = []


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify_rs256(signing_input, signature):
    with tempfile.TemporaryDirectory() as directory:
        data = os.path.join(directory, "data")
        sig = os.path.join(directory, "sig")
        with open(data, "wb") as f:
            f.write(signing_input)
        with open(sig, "wb") as f:
            f.write(signature)
        result = subprocess.run(["openssl", "dgst", "-sha256", "-verify", PUBLIC_KEY, "-signature", sig, data],
                                capture_output=True)
        return result.returncode == 0


def check_assertion(assertion):
    parts = assertion.split(".")
    if len(parts) != 3:
        return "the assertion is not a JWS compact serialization"
    header = json.loads(b64url(parts[0]))
    claims = json.loads(b64url(parts[1]))
    if header.get("alg") != "RS256":
        return "alg is %r, not RS256" % header.get("alg")
    if not verify_rs256((parts[0] + "." + parts[1]).encode(), b64url(parts[2])):
        return "Invalid JWT Signature."
    if claims.get("iss") != CLIENT_EMAIL:
        return "iss is %r" % claims.get("iss")
    if claims.get("scope") != SCOPE:
        return "scope is %r" % claims.get("scope")
    if claims.get("aud") != AUDIENCE:
        return "aud is %r, not %r" % (claims.get("aud"), AUDIENCE)
    now = time.time()
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, (int, float)) or not isinstance(exp, (int, float)):
        return "iat and exp must be numbers"
    if abs(iat - now) > 60:
        return "iat is %s, now is %s" % (iat, now)
    if exp - iat > 3600 or exp <= now:
        return "exp is %s for iat %s (at most an hour, in the future)" % (exp, iat)
    return None


def fcm_error(status, message, code=None):
    error = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "INTERNAL")}
    details = [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []}]
    details.append({"@type": FCM_ERROR, "errorCode": code or STATUS_NAMES.get(status, "INTERNAL")})
    error["details"] = details
    return {"error": error}


def check_message(body):
    unknown = set(body) - {"message", "validate_only"}
    if unknown:
        return "Unknown name %r" % sorted(unknown)[0]
    message = body.get("message")
    if not isinstance(message, dict):
        return "'message' is required"
    unknown = set(message) - MESSAGE_FIELDS
    if unknown:
        return "Unknown name %r at 'message'" % sorted(unknown)[0]
    targets = [t for t in ("token", "topic", "condition", "fid") if t in message]
    if len(targets) != 1:
        return "Exactly one of token, topic, condition or fid must be specified"
    data = message.get("data", {})
    if not isinstance(data, dict):
        return "data must be a map"
    size = 0
    for index, (key, value) in enumerate(data.items()):
        if not isinstance(value, str):
            return "Invalid value at 'message.data[%d].value' (TYPE_STRING), %s" % (index, json.dumps(value))
        if key in ("from", "message_type") or key.startswith("google") or key.startswith("gcm"):
            return "Invalid data payload key: %s" % key
        size += len(key.encode()) + len(value.encode())
    for value in (message.get("notification") or {}).values():
        size += len(str(value).encode())
    if size > 4096:
        return "Message is too big"
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def record(self, **entry):
        entry["at"] = time.time()
        entry["path"] = self.path
        # W3C trace context the sender passed on (the tracing tests check it).
        if self.headers.get("traceparent") is not None:
            entry["traceparent"] = self.headers.get("traceparent")
        with lock:
            log.append(entry)

    def do_GET(self):
        if self.path == "/control/log":
            with lock:
                self.reply(200, log)
        else:
            self.reply(404, {})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/control/script":
            with lock:
                script.extend(json.loads(raw))
            self.reply(200, {})
        elif self.path == "/token":
            self.token(raw)
        elif self.path.startswith("/v1/projects/") and self.path.endswith("/messages:send"):
            self.send_message(raw)
        else:
            self.reply(404, fcm_error(404, "no such endpoint"))

    def token(self, raw):
        if not (self.headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
            self.record(kind="token", verdict="bad content type")
            return self.reply(400, {"error": "invalid_request", "error_description": "form encoding required"})
        form = urllib.parse.parse_qs(raw.decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            self.record(kind="token", verdict="bad grant_type")
            return self.reply(400, {"error": "unsupported_grant_type", "error_description": str(form.get("grant_type"))})
        problem = check_assertion((form.get("assertion") or [""])[0])
        if problem:
            self.record(kind="token", verdict=problem)
            return self.reply(400, {"error": "invalid_grant", "error_description": problem})
        with lock:
            value = "ya29.test-%d" % (len(issued) + 1)
            issued.add(value)
        self.record(kind="token", verdict="ok", token=value)
        self.reply(200, {"access_token": value, "expires_in": 3599, "token_type": "Bearer"})

    def send_message(self, raw):
        project = self.path[len("/v1/projects/"):-len("/messages:send")]
        authorization = self.headers.get("Authorization") or ""
        with lock:
            known = authorization.startswith("Bearer ") and authorization[7:] in issued
        if not known:
            self.record(kind="send", verdict="unauthenticated")
            return self.reply(401, fcm_error(401, "Request had invalid authentication credentials."))
        if project != PROJECT:
            self.record(kind="send", verdict="wrong project %s" % project)
            return self.reply(403, fcm_error(403, "SenderId mismatch", "SENDER_ID_MISMATCH"))
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self.record(kind="send", verdict="bad content type")
            return self.reply(400, fcm_error(400, "Content-Type must be application/json"))
        try:
            body = json.loads(raw)
        except ValueError as error:
            self.record(kind="send", verdict="not JSON")
            return self.reply(400, fcm_error(400, "Invalid JSON payload received. %s" % error))
        problem = check_message(body)
        if problem:
            self.record(kind="send", verdict=problem, body=body)
            return self.reply(400, fcm_error(400, problem))
        message = body["message"]
        with lock:
            scripted = script.pop(0) if script else None
        if scripted is None and str(message.get("token", "")).startswith("dead-"):
            scripted = {"status": 404, "errorCode": "UNREGISTERED"}
        if scripted and scripted.get("status", 200) != 200:
            status = scripted["status"]
            self.record(kind="send", verdict="scripted %d" % status, body=body)
            headers = [("Retry-After", str(scripted["retry_after"]))] if "retry_after" in scripted else []
            message_text = scripted.get("message", "Requested entity was not found." if status == 404 else "scripted failure")
            return self.reply(status, fcm_error(status, message_text, scripted.get("errorCode")), headers)
        self.record(kind="send", verdict="ok", body=body)
        self.reply(200, {"name": "projects/%s/messages/%d" % (PROJECT, len(log))})

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write("%d %d" % (server.server_address[1], os.getpid()))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
