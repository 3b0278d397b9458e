"""A loopback OTLP trace receiver for the trace tests (tests/api/traces.rs).

It listens on 127.0.0.1 for OTLP over HTTP/protobuf (POST /v1/traces) and over gRPC
(TraceService/Export), decodes every export with OpenTelemetry's own protobuf definitions
(PyPI `opentelemetry-proto`, pinned in tests/tools/requirements.txt), and writes one JSON line
per span to stdout, after a first line naming its two ports:

    {"http": 40123, "grpc": 40124}
    {"transport": "http", "trace_id": "...", "span_id": "...", "parent_span_id": "...",
     "name": "...", "kind": "SPAN_KIND_SERVER", "status": "STATUS_CODE_ERROR",
     "attributes": {...}, "resource": {...}, "trace_state": "..."}

Every request it gets, whatever its path, is also written as {"request": transport, "path": ...},
so that a test can tell that nothing was sent at all. It stops on its own after --max-seconds,
or when its standard input closes (the test that started it ended).

With --discard it answers every OTLP/HTTP export at once, without decoding or writing anything
after its ports: the collector the benchmark of traces exports to (docs/src/benchmarks.md).
"""

import argparse
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2

LOCK = threading.Lock()


def emit(record):
    with LOCK:
        sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
        sys.stdout.flush()


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if kind is None:
        return None
    return getattr(value, kind)


def attributes(pairs):
    return {kv.key: any_value(kv.value) for kv in pairs}


def record_spans(request, transport):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                emit(
                    {
                        "transport": transport,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "trace_state": span.trace_state,
                        "name": span.name,
                        "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                        "status": trace_pb2.Status.StatusCode.Name(span.status.code),
                        "status_message": span.status.message,
                        "attributes": attributes(span.attributes),
                        "events": [event.name for event in span.events],
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                    }
                )


DISCARD = False


class HttpReceiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if DISCARD:
            # An empty body is an empty ExportTraceServiceResponse.
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        emit({"request": "http", "path": self.path})
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        record_spans(request, "http")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):
        emit({"request": "http", "path": self.path})
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class GrpcReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        emit({"request": "grpc", "path": "TraceService/Export"})
        record_spans(request, "grpc")
        return trace_service_pb2.ExportTraceServiceResponse()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-seconds", type=float, default=900)
    parser.add_argument("--discard", action="store_true")
    args = parser.parse_args()
    global DISCARD
    DISCARD = args.discard

    http_server = ThreadingHTTPServer(("127.0.0.1", 0), HttpReceiver)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(GrpcReceiver(), grpc_server)
    grpc_port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    emit({"http": http_server.server_address[1], "grpc": grpc_port})

    stdin_closed = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stdin_closed.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    stdin_closed.wait(args.max_seconds)
    grpc_server.stop(0)
    http_server.shutdown()


if __name__ == "__main__":
    main()
