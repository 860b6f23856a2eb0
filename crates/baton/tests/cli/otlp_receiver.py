"""A test OTLP/HTTP trace collector for baton's traces tests.

Usage: otlp_receiver.py OUT MODE

Listens on 127.0.0.1 (a free port, printed as the first line of stdout)
and decodes each POST to /v1/traces with OpenTelemetry's own protobuf
definitions (the opentelemetry-proto package's ExportTraceServiceRequest).
MODE "ok" answers 200 with an ExportTraceServiceResponse and appends what
it decoded to OUT, one JSON object per request; a body that does not
decode is answered 400 and recorded with "error". MODE "stall" reads the
request and never answers.

Each object: {"path", "content_type", "resource": {KEY: VALUE},
"scopes": [NAME], "spans": [{"trace_id", "span_id", "parent_span_id"
(hex, "" for none), "name", "kind", "flags", "start", "end" (ns since
1970), "status": {"code", "message"}, "attributes": {KEY: VALUE}}]}.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]
MODE = sys.argv[2]
LOCK = threading.Lock()


def value(v):
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which in ("array_value", "kvlist_value", "bytes_value"):
        return str(getattr(v, which))
    return getattr(v, which)


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def decoded(req):
    resources, scopes, spans = {}, [], []
    for rs in req.resource_spans:
        resources.update(attributes(rs.resource.attributes))
        for ss in rs.scope_spans:
            scopes.append(ss.scope.name)
            for s in ss.spans:
                spans.append(
                    {
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "flags": s.flags,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "status": {"code": s.status.code, "message": s.status.message},
                        "attributes": attributes(s.attributes),
                    }
                )
    return {"resource": resources, "scopes": scopes, "spans": spans}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if MODE == "stall":
            threading.Event().wait()
            return
        got = {"path": self.path, "content_type": self.headers.get("Content-Type")}
        status = 200
        try:
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            got.update(decoded(req))
        except DecodeError as e:
            got["error"] = str(e)
            status = 400
        with LOCK, open(OUT, "a", encoding="utf-8") as f:
            f.write(json.dumps(got) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
