"""A counting reverse proxy in front of the test S3 server: what a command asks of the object store, measured on the
wire (requests by method, and the body bytes of the answers to GETs), with the real client unchanged. It forwards
each request as received (the Host header too, so the client's SigV4 signature still holds at moto) and runs in a
thread of the test process for one test."""
from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class CountingProxy:
    """`url` is the endpoint to give the client; what went through: `requests[method]`, `get_bytes` (all GETs'
    answers, listings too) and `object_bytes[(method, "/bucket/key")]` (the answers to requests for one object,
    a request with a query, a listing, not counted there); `reset()` zeroes them; `stop()` ends it."""

    def __init__(self, target_port: int):
        self.requests: Counter = Counter()
        self.get_bytes = 0
        self.object_bytes: Counter = Counter()
        self.object_requests: Counter = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"      # keep-alive, as the SDK expects

            def log_message(self, *args):      # quiet: pytest shows stderr of failing tests
                pass

            def _forward(self):
                if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
                    raise NotImplementedError("chunked request bodies are not forwarded (no test sends one here)")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection("127.0.0.1", target_port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                with proxy._lock:
                    proxy.requests[self.command] += 1
                    if self.command == "GET":
                        proxy.get_bytes += len(data)
                    path, query = self.path.partition("?")[::2]
                    if not query:
                        proxy.object_requests[(self.command, path)] += 1
                        proxy.object_bytes[(self.command, path)] += len(data)
                self.send_response_only(resp.status, resp.reason)
                for name, value in resp.getheaders():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                # a HEAD's answer names the object's length and carries no body
                self.send_header("Content-Length", resp.getheader("Content-Length", "0") if self.command == "HEAD"
                                 else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.get_bytes = 0
            self.object_bytes.clear()
            self.object_requests.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
