#!/usr/bin/env python3
"""An independent OTLP/HTTP JSON trace receiver for the trace test (Integration TraceContextPipelineTests).

Listens on 127.0.0.1:<port> (0: a free one, written to PORT_FILE once listening), accepts POST /v1/traces with
Content-Type application/json, and parses each body with the OpenTelemetry project's own message definitions
(PyPI opentelemetry-proto: ExportTraceServiceRequest, via google.protobuf.json_format.Parse, which refuses unknown
fields and wrong types). OTLP/JSON writes trace and span ids as hex (https://opentelemetry.io/docs/specs/otlp/,
"JSON Protobuf Encoding"), where protobuf's generic JSON mapping expects base64 for bytes: as OTLP receivers do, the
ids are converted before parsing, and a wrong length is refused. Every span received is appended to SPANS_FILE as one
JSON line; a request that does not parse is answered 400 and logged there as {"error": ...}.

    otlp_receiver.py PORT PORT_FILE SPANS_FILE
"""
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_LENGTHS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(request):
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for field, length in ID_LENGTHS.items():
                    if field not in span:
                        continue
                    raw = bytes.fromhex(span[field])
                    if len(raw) != length:
                        raise ValueError(f"{field} {span[field]!r} is not {length} bytes of hex")
                    span[field] = base64.b64encode(raw).decode()


def spans_of(message):
    for resource_spans in message.resource_spans:
        resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "service": resource.get("service.name"),
                    "scope": scope_spans.scope.name,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex() or None,
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "status": span.status.code,
                    "statusMessage": span.status.message,
                    "attributes": {a.key: a.value.string_value for a in span.attributes},
                }


def main():
    port, port_file, spans_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            lines = []
            try:
                if self.path != "/v1/traces":
                    raise ValueError(f"path {self.path}")
                if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
                    raise ValueError(f"content type {self.headers.get('Content-Type')}")
                request = json.loads(body)
                hex_ids_to_base64(request)
                message = json_format.Parse(json.dumps(request), ExportTraceServiceRequest())
                lines = [json.dumps(span) for span in spans_of(message)]
                status, answer = 200, b"{}"
            except Exception as error:  # noqa: BLE001 - every failure is the test's evidence
                lines = [json.dumps({"error": str(error), "body": body.decode(errors="replace")[:2000]})]
                status, answer = 400, json.dumps({"error": str(error)}).encode()
            with open(spans_file, "a") as out:
                out.write("".join(line + "\n" for line in lines))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    import os
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
