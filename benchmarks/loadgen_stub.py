"""A trivial loopback endpoint for measuring the load generator: `python -m benchmarks.loadgen_stub`.

It answers GET /models like the local endpoint (a budget and zero counters) and every POST
/models/<TargetModel>/invoke with 200, a tiny body and a cache hit, at once. It prints its URL on one line,
then serves until its standard input closes (so it never outlives the benchmark that started it).
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODELS = b'{"budget": 1000, "cacheHits": 0, "cacheMisses": 0, "loaded": []}'
REPLY = b'{"outputs": []}'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's delayed
    # ACK (40 ms on Linux) on a kept-alive connection.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(MODELS, {})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(REPLY, {"X-Local-Model-Cache": "hit"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def main() -> int:
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()  # until the parent closes it
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
