"""A small, strict OAuth 2.0 authorization server (RFC 6749, PKCE per RFC 7636, bearer tokens per
RFC 6750) for the tests of the router's OAuth client. One confidential client, set on the command
line; the "user" approves every authorization request at once (no login page).

- GET /authorize?response_type=code&client_id&redirect_uri&state&code_challenge
  &code_challenge_method=S256[&scope]: checks every parameter (an http(s) redirect_uri without a
  fragment, a 43-128 character base64url challenge, S256 only: plain or no method is refused) and
  answers 302 to redirect_uri?code=CODE&state=STATE; the code is single use, lives 60 s and is
  bound to the client, the redirect_uri, the challenge and the scope. Any problem: 400
  {"error": "invalid_request", "error_description"}, never a redirect.
- POST /token, application/x-www-form-urlencoded, the client authenticated by HTTP Basic
  (RFC 6749 2.3.1: form-urlencoded id and secret) or by client_id and client_secret form fields
  (one method only, not both):
  grant_type=authorization_code with code, redirect_uri (the one given to /authorize) and
  code_verifier (43-128 unreserved characters, BASE64URL(SHA256(verifier)) == challenge);
  grant_type=refresh_token with refresh_token (rotated: the old one stops working) and an
  optional narrower scope. Answers {"access_token", "token_type": "Bearer", "expires_in",
  "refresh_token", "scope"} or RFC 6749 5.2 errors, always with Cache-Control: no-store. A code
  is spent by its first exchange attempt, even a failed one (wrong verifier or redirect_uri); a
  second use is invalid_grant and revokes every token issued from that code (RFC 6749 4.1.2).
- GET /resource[/...]: needs Authorization: Bearer <valid, unexpired access token>; answers
  {"ok": true, "token_generation": N, "path", "query", "scope"} (N is 1 for the code exchange's
  token, +1 per refresh) or 401 with WWW-Authenticate: Bearer ... error="invalid_token" (no error
  code when the request has no credentials at all, as RFC 6750 3.1 says).
- GET /stats: {"authorize", "token_code", "token_refresh", "resource_ok", "resource_refused",
  "grants_revoked", "errors": [the last 20 error descriptions]}; the token counters count
  tokens issued, refusals are in "errors".

Bounds: request bodies of at most 16 KiB (413 beyond, chunked bodies refused), request targets
of at most 8 KiB (414), at most 64 parameters, duplicate parameters and duplicate Authorization
headers refused.

Usage: oauth_provider.py PORT_FILE --client-id ID --client-secret SECRET [--access-lifetime SECONDS]
Writes "port pid" to PORT_FILE once listening.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import re
import secrets
import threading
import time
import urllib.parse

parser = argparse.ArgumentParser(description="A strict OAuth 2.0 authorization server for tests.")
parser.add_argument("port_file")
parser.add_argument("--client-id", required=True)
parser.add_argument("--client-secret", required=True)
parser.add_argument("--access-lifetime", type=int, default=3600, help="access token lifetime in seconds")
arguments = parser.parse_args()
if arguments.access_lifetime <= 0:
    parser.error("--access-lifetime must be positive")

PORT_FILE = arguments.port_file
CLIENT_ID = arguments.client_id
CLIENT_SECRET = arguments.client_secret
ACCESS_LIFETIME = arguments.access_lifetime
CODE_LIFETIME = 60
MAX_BODY = 16 * 1024
MAX_TARGET = 8 * 1024
MAX_FIELDS = 64
KEEP_EXPIRED = 600  # how long expired codes and tokens are remembered (for precise errors)

CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43,128}")
VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*")
B64TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")

lock = threading.Lock()
codes = {}     # code -> {client_id, redirect_uri, challenge, scope, expires, used, grant}
grants = {}    # grant id -> {revoked, generation}
access = {}    # access token -> {client_id, grant, generation, scope, expires}
refresh = {}   # refresh token -> {client_id, grant, scope}
stats = {"authorize": 0, "token_code": 0, "token_refresh": 0, "resource_ok": 0, "resource_refused": 0,
         "grants_revoked": 0}
errors = []


class Refusal(Exception):
    def __init__(self, status, error, description, headers=()):
        super().__init__(description)
        self.status, self.error, self.description, self.headers = status, error, description, list(headers)


def note_error(text):
    with lock:
        errors.append(text)
        del errors[:-20]


def parameters(text):
    """The parameters of a query or form body as a dict; refuses malformed and duplicate ones.
    A parameter without a value counts as omitted (RFC 6749 3.1)."""
    try:
        pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=True,
                                       errors="strict", max_num_fields=MAX_FIELDS)
    except ValueError as error:
        raise Refusal(400, "invalid_request", "malformed parameters: %s" % error)
    found = {}
    for name, value in pairs:
        if name in found:
            raise Refusal(400, "invalid_request", "duplicate parameter %s" % name)
        found[name] = value
    return {name: value for name, value in found.items() if value != ""}


def s256(verifier):
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


def purge(now):
    """Forgets codes and tokens long expired (the caller holds the lock)."""
    for table in (codes, access):
        for key in [key for key, entry in table.items() if entry["expires"] + KEEP_EXPIRED < now]:
            del table[key]


def issue(client_id, grant_id, scope, now):
    """A new access and refresh token for a grant (the caller holds the lock)."""
    grant = grants[grant_id]
    grant["generation"] += 1
    token = secrets.token_urlsafe(32)
    access[token] = {"client_id": client_id, "grant": grant_id, "generation": grant["generation"], "scope": scope,
                     "expires": now + ACCESS_LIFETIME}
    refresh_token = secrets.token_urlsafe(32)
    refresh[refresh_token] = {"client_id": client_id, "grant": grant_id, "scope": scope}
    return {"access_token": token, "token_type": "Bearer", "expires_in": ACCESS_LIFETIME,
            "refresh_token": refresh_token, "scope": scope}


def revoke(grant_id):
    """Revokes every token of a grant (the caller holds the lock)."""
    grant = grants.get(grant_id)
    if grant is None or grant["revoked"]:
        return
    grant["revoked"] = True
    stats["grants_revoked"] += 1
    for table in (access, refresh):
        for key in [key for key, entry in table.items() if entry["grant"] == grant_id]:
            del table[key]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, where, refusal, extra_headers=()):
        note_error("%s: %s: %s" % (where, refusal.error, refusal.description))
        body = {"error": refusal.error, "error_description": refusal.description}
        self.reply(refusal.status, body, list(extra_headers) + refusal.headers)

    def read_body(self):
        """The request body (bounded); None after answering a refusal itself."""
        if self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True
            self.refuse("%s %s" % (self.command, self.path.split("?")[0]),
                        Refusal(411, "invalid_request", "Transfer-Encoding is not supported; send Content-Length"))
            return None
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1 or (lengths and not lengths[0].strip().isdigit()):
            self.close_connection = True
            self.refuse("%s %s" % (self.command, self.path.split("?")[0]),
                        Refusal(400, "invalid_request", "bad Content-Length %r" % lengths))
            return None
        length = int(lengths[0]) if lengths else 0
        if length > MAX_BODY:
            self.close_connection = True
            self.refuse("%s %s" % (self.command, self.path.split("?")[0]),
                        Refusal(413, "invalid_request", "body of %d bytes, at most %d" % (length, MAX_BODY)))
            return None
        return self.rfile.read(length) if length else b""

    def dispatch(self, routes):
        if len(self.path) > MAX_TARGET:
            self.close_connection = True
            return self.refuse(self.command, Refusal(414, "invalid_request", "request target too long"))
        body = self.read_body()
        if body is None:
            return
        target = urllib.parse.urlsplit(self.path)
        path = target.path
        route = routes.get(path)
        if route is None and path.startswith("/resource/") and "/resource" in routes:
            route = routes["/resource"]
        if route is None:
            others = [name for name, table in (("GET", GET_ROUTES), ("POST", POST_ROUTES)) if path in table]
            if others:
                return self.refuse("%s %s" % (self.command, path),
                                   Refusal(405, "invalid_request", "use %s" % others[0], [("Allow", others[0])]))
            return self.refuse("%s %s" % (self.command, path), Refusal(404, "invalid_request", "no such endpoint"))
        try:
            route(self, target, body)
        except Exception as error:  # answer rather than drop the connection; the test sees it in /stats
            note_error("%s %s: server_error: %r" % (self.command, path, error))
            self.close_connection = True
            try:
                self.reply(500, {"error": "server_error", "error_description": repr(error)})
            except OSError:
                pass
            raise

    def do_GET(self):
        self.dispatch(GET_ROUTES)

    def do_POST(self):
        self.dispatch(POST_ROUTES)

    # GET /authorize

    def authorize(self, target, body):
        try:
            location = self.check_authorization(parameters(target.query))
        except Refusal as refusal:
            return self.refuse("authorize", refusal)
        self.reply(302, None, [("Location", location), ("Cache-Control", "no-store")])

    def check_authorization(self, query):
        def bad(description):
            return Refusal(400, "invalid_request", description)
        # client_id and redirect_uri first: with either wrong, never redirect (RFC 6749 4.1.2.1).
        client_id = query.get("client_id")
        if client_id is None:
            raise bad("client_id is missing")
        if client_id != CLIENT_ID:
            raise bad("unknown client_id %r" % client_id)
        redirect_uri = query.get("redirect_uri")
        if redirect_uri is None:
            raise bad("redirect_uri is missing")
        try:
            parts = urllib.parse.urlsplit(redirect_uri)
            parts.port  # raises on a malformed port
        except ValueError:
            raise bad("redirect_uri %r is not a URL" % redirect_uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise bad("redirect_uri %r is not an absolute http(s) URL" % redirect_uri)
        if parts.fragment or "#" in redirect_uri:
            raise bad("redirect_uri must not have a fragment")
        response_type = query.get("response_type")
        if response_type != "code":
            raise bad("response_type is %r, only code is supported" % response_type)
        state = query.get("state")
        if state is None:
            raise bad("state is missing")
        challenge = query.get("code_challenge")
        if challenge is None:
            raise bad("code_challenge is missing (PKCE is required)")
        if not CHALLENGE.fullmatch(challenge):
            raise bad("code_challenge must be 43-128 base64url characters")
        method = query.get("code_challenge_method")
        if method != "S256":
            raise bad("code_challenge_method is %r, only S256 is allowed" % method)
        scope = query.get("scope", "")
        if scope and not SCOPE.fullmatch(scope):
            raise bad("malformed scope %r" % scope)
        code = secrets.token_urlsafe(32)
        now = time.monotonic()
        with lock:
            purge(now)
            codes[code] = {"client_id": client_id, "redirect_uri": redirect_uri, "challenge": challenge, "scope": scope,
                           "expires": now + CODE_LIFETIME, "used": False, "grant": None}
            stats["authorize"] += 1
        separator = "&" if parts.query else "?"
        return redirect_uri + separator + urllib.parse.urlencode({"code": code, "state": state})

    # POST /token

    def token(self, target, body):
        no_store = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
        try:
            answer = self.check_token_request(target, body)
        except Refusal as refusal:
            return self.refuse("token", refusal, no_store)
        self.reply(200, answer, no_store)

    def authenticate(self, form):
        """The authenticated client's id (RFC 6749 2.3.1)."""
        def unauthorized(description):
            return Refusal(401, "invalid_client", description, [("WWW-Authenticate", 'Basic realm="oauth-provider"')])
        headers = self.headers.get_all("Authorization") or []
        if len(headers) > 1:
            raise Refusal(400, "invalid_request", "more than one Authorization header")
        if headers:
            scheme, _, credentials = headers[0].strip().partition(" ")
            if scheme.lower() != "basic":
                raise unauthorized("Authorization scheme %r, expected Basic" % scheme)
            if "client_secret" in form:
                raise Refusal(400, "invalid_request", "client authenticated by both HTTP Basic and client_secret")
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
            except ValueError:
                raise unauthorized("malformed Basic credentials")
            if ":" not in decoded:
                raise unauthorized("Basic credentials without a colon")
            raw_id, _, raw_secret = decoded.partition(":")
            try:
                client_id = urllib.parse.unquote_plus(raw_id, errors="strict")
                client_secret = urllib.parse.unquote_plus(raw_secret, errors="strict")
            except UnicodeDecodeError:
                raise unauthorized("malformed Basic credentials")
            if "client_id" in form and form["client_id"] != client_id:
                raise unauthorized("client_id %r differs from the Basic credentials' %r" % (form["client_id"], client_id))
        elif "client_secret" in form:
            client_id, client_secret = form.get("client_id"), form["client_secret"]
            if client_id is None:
                raise Refusal(400, "invalid_request", "client_secret without client_id")
        else:
            raise unauthorized("no client authentication (HTTP Basic or client_id and client_secret)")
        if not (secrets.compare_digest(client_id.encode(), CLIENT_ID.encode())
                and secrets.compare_digest(client_secret.encode(), CLIENT_SECRET.encode())):
            raise unauthorized("client authentication failed")
        return client_id

    def check_token_request(self, target, body):
        if target.query:
            raise Refusal(400, "invalid_request", "parameters belong in the body, not the URL")
        media_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media_type != "application/x-www-form-urlencoded":
            raise Refusal(400, "invalid_request", "Content-Type %r, expected application/x-www-form-urlencoded"
                          % self.headers.get("Content-Type"))
        try:
            text = body.decode("ascii")
        except UnicodeDecodeError:
            raise Refusal(400, "invalid_request", "the body is not percent-encoded ASCII")
        form = parameters(text)
        client_id = self.authenticate(form)
        grant_type = form.get("grant_type")
        if grant_type is None:
            raise Refusal(400, "invalid_request", "grant_type is missing")
        if grant_type == "authorization_code":
            return self.exchange_code(form, client_id)
        if grant_type == "refresh_token":
            return self.refresh(form, client_id)
        raise Refusal(400, "unsupported_grant_type", "grant_type %r is not supported" % grant_type)

    def exchange_code(self, form, client_id):
        for name in ("code", "redirect_uri", "code_verifier"):
            if name not in form:
                raise Refusal(400, "invalid_request", "%s is missing" % name)
        verifier = form["code_verifier"]
        if not VERIFIER.fullmatch(verifier):
            raise Refusal(400, "invalid_request", "code_verifier must be 43-128 unreserved characters")
        now = time.monotonic()
        with lock:
            entry = codes.get(form["code"])
            if entry is None:
                raise Refusal(400, "invalid_grant", "unknown authorization code")
            if entry["client_id"] != client_id:
                raise Refusal(400, "invalid_grant", "the code was issued to another client")
            if entry["used"]:
                revoke(entry["grant"])
                raise Refusal(400, "invalid_grant", "authorization code already used; its tokens are revoked")
            entry["used"] = True  # spent by this attempt, whatever its outcome
            if now > entry["expires"]:
                raise Refusal(400, "invalid_grant", "authorization code expired")
            if form["redirect_uri"] != entry["redirect_uri"]:
                raise Refusal(400, "invalid_grant", "redirect_uri differs from the authorization request's")
            if not secrets.compare_digest(s256(verifier), entry["challenge"]):
                raise Refusal(400, "invalid_grant", "code_verifier does not match the code_challenge")
            grant_id = secrets.token_hex(8)
            grants[grant_id] = {"revoked": False, "generation": 0}
            entry["grant"] = grant_id
            stats["token_code"] += 1
            return issue(client_id, grant_id, entry["scope"], now)

    def refresh(self, form, client_id):
        if "refresh_token" not in form:
            raise Refusal(400, "invalid_request", "refresh_token is missing")
        requested = form.get("scope")
        if requested is not None and not SCOPE.fullmatch(requested):
            raise Refusal(400, "invalid_request", "malformed scope %r" % requested)
        now = time.monotonic()
        with lock:
            entry = refresh.get(form["refresh_token"])
            if entry is None:
                raise Refusal(400, "invalid_grant", "unknown, rotated or revoked refresh token")
            if entry["client_id"] != client_id:
                raise Refusal(400, "invalid_grant", "the refresh token was issued to another client")
            scope = entry["scope"]
            if requested is not None:
                if not set(requested.split(" ")) <= set(scope.split(" ")):
                    raise Refusal(400, "invalid_scope", "scope %r exceeds the granted %r" % (requested, scope))
                scope = requested
            del refresh[form["refresh_token"]]
            purge(now)
            stats["token_refresh"] += 1
            return issue(client_id, entry["grant"], scope, now)

    # GET /resource

    def resource(self, target, body):
        realm = 'Bearer realm="oauth-provider"'
        headers = self.headers.get_all("Authorization") or []
        problem = None
        if len(headers) > 1:
            problem = Refusal(400, "invalid_request", "more than one Authorization header",
                              [("WWW-Authenticate", realm + ', error="invalid_request"')])
        elif not headers:
            problem = Refusal(401, "invalid_token", "no access token", [("WWW-Authenticate", realm)])
        else:
            scheme, _, token = headers[0].strip().partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not B64TOKEN.fullmatch(token):
                problem = Refusal(401, "invalid_token", "Authorization is not a Bearer token",
                                  [("WWW-Authenticate", realm)])
            else:
                now = time.monotonic()
                with lock:
                    entry = access.get(token)
                if entry is None:
                    description = "unknown or revoked access token"
                elif now >= entry["expires"]:
                    description = "the access token expired"
                else:
                    description = None
                if description:
                    challenge = '%s, error="invalid_token", error_description="%s"' % (realm, description)
                    problem = Refusal(401, "invalid_token", description, [("WWW-Authenticate", challenge)])
        if problem:
            with lock:
                stats["resource_refused"] += 1
            return self.refuse("resource", problem)
        with lock:
            stats["resource_ok"] += 1
        self.reply(200, {"ok": True, "token_generation": entry["generation"], "path": target.path,
                         "query": target.query, "scope": entry["scope"]}, [("Cache-Control", "no-store")])

    # GET /stats

    def report_stats(self, target, body):
        with lock:
            answer = dict(stats, errors=list(errors))
        self.reply(200, answer, [("Cache-Control", "no-store")])


GET_ROUTES = {"/authorize": Handler.authorize, "/resource": Handler.resource, "/stats": Handler.report_stats}
POST_ROUTES = {"/token": Handler.token}

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write("%d %d" % (server.server_address[1], os.getpid()))
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
