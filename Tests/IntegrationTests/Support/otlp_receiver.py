"""A local OTLP/HTTP trace receiver for the tracing tests: what a collector would see.

It checks each export as strictly as a collector does, with the OpenTelemetry protobuf
definitions (the opentelemetry-proto package, which scripts/setup installs):
- POST /v1/traces only, Content-Type application/x-protobuf (gzip Content-Encoding allowed), a
  body that parses as an ExportTraceServiceRequest with no unknown fields;
- every resource names service.name; every span has a 16-byte non-zero trace id, an 8-byte
  non-zero span id, an empty or 8-byte parent span id, a name, a known kind, and
  start <= end (both set);
answered as the specification says: 200 with an empty ExportTraceServiceResponse, or 400.
- GET /control/spans: the spans received so far as JSON (ids in hex).
- GET /control/errors: every check that failed.

Usage: otlp_receiver.py PORT_FILE
Writes "port pid" to PORT_FILE once listening.
"""

import gzip
import http.server
import json
import os
import sys
import threading

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

PORT_FILE = sys.argv[1]
MAX_BODY = 16 << 20

lock = threading.Lock()
spans = []
errors = []


def value_of(any_value):
    """An AnyValue as a plain Python value."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value", "bytes_value"):
        return str(getattr(any_value, kind))
    return getattr(any_value, kind)


def attributes(key_values):
    return {kv.key: value_of(kv.value) for kv in key_values}


def has_unknown_fields(message):
    """Whether the message or any message inside it carries fields the schema does not know."""
    if len(unknown_fields.UnknownFieldSet(message)) > 0:
        return True
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        children = [value] if isinstance(value, Message) else list(value)
        for child in children:
            if has_unknown_fields(child):
                return True
    return False


def check(request):
    """The problems of one export (empty when it is well-formed) and its spans as dictionaries."""
    problems = []
    found = []
    if has_unknown_fields(request):
        problems.append("the export has fields the OTLP schema does not know")
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        service = resource.get("service.name")
        if not isinstance(service, str) or not service:
            problems.append("a resource has no service.name")
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                where = "span %r" % span.name
                if len(span.trace_id) != 16 or span.trace_id == bytes(16):
                    problems.append("%s: trace id %r is not 16 non-zero bytes" % (where, span.trace_id.hex()))
                if len(span.span_id) != 8 or span.span_id == bytes(8):
                    problems.append("%s: span id %r is not 8 non-zero bytes" % (where, span.span_id.hex()))
                if len(span.parent_span_id) not in (0, 8):
                    problems.append("%s: parent span id %r is not 8 bytes" % (where, span.parent_span_id.hex()))
                if not span.name:
                    problems.append("a span has no name")
                if span.kind not in trace_pb2.Span.SpanKind.values() or span.kind == trace_pb2.Span.SPAN_KIND_UNSPECIFIED:
                    problems.append("%s: kind %d is not a known span kind" % (where, span.kind))
                if span.start_time_unix_nano == 0 or span.end_time_unix_nano < span.start_time_unix_nano:
                    problems.append("%s: start %d and end %d are not an interval" % (
                        where, span.start_time_unix_nano, span.end_time_unix_nano))
                found.append({
                    "service": service,
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                    "attributes": attributes(span.attributes),
                    "status": trace_pb2.Status.StatusCode.Name(span.status.code),
                    "status_message": span.status.message,
                })
    return problems, found


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *arguments):
        pass

    def reply(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, problem):
        with lock:
            errors.append(problem)
        self.reply(400, json.dumps({"error": problem}).encode(), "application/json")

    def do_GET(self):
        with lock:
            if self.path == "/control/spans":
                answer = json.dumps(spans).encode()
            elif self.path == "/control/errors":
                answer = json.dumps(errors).encode()
            else:
                answer = None
        if answer is None:
            self.reply(404, b"{}", "application/json")
        else:
            self.reply(200, answer, "application/json")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_BODY:
            self.rfile.read(max(0, min(length, MAX_BODY)))
            return self.refuse("POST %s: Content-Length %d" % (self.path, length))
        raw = self.rfile.read(length)
        if self.path != "/v1/traces":
            return self.refuse("POST %s: not the traces path /v1/traces" % self.path)
        content_type = self.headers.get("Content-Type") or ""
        if content_type != "application/x-protobuf":
            return self.refuse("POST /v1/traces: Content-Type %r, not application/x-protobuf" % content_type)
        if (self.headers.get("Content-Encoding") or "") == "gzip":
            raw = gzip.decompress(raw)
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            request.ParseFromString(raw)
        except DecodeError as error:
            return self.refuse("POST /v1/traces: not an ExportTraceServiceRequest: %s" % error)
        problems, found = check(request)
        if problems:
            with lock:
                spans.extend(found)
            return self.refuse("; ".join(problems))
        with lock:
            spans.extend(found)
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.reply(200, answer, "application/x-protobuf")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write("%d %d" % (server.server_address[1], os.getpid()))
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
