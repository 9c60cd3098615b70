"""A loopback stand-in for SageMaker's InvokeEndpoint: boto3 reaches it through AWS_ENDPOINT_URL_*.

It answers `POST /endpoints/<name>/invocations` with a Triton binary reply of fixed ImageNet logits, so
a client's whole path (read picture, prepare, encode, sign, send, decode, label) runs for real and only
the network hop and the model are stood in for.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

BINARY = "application/vnd.sagemaker-triton.binary+json"
CLASSES = 1000
# tabby, tiger cat, Egyptian cat, lynx, Persian cat: a picture of a cat, as far as the stub knows.
WINNERS = {281: 9.0, 282: 8.0, 285: 7.0, 287: 6.0, 283: 5.0}


def logits_reply(batch: int) -> tuple[str, bytes]:
    scores = np.zeros((batch, CLASSES), dtype=np.float32)
    for index, score in WINNERS.items():
        scores[:, index] = score
    header = json.dumps(
        {
            "model_name": "stub",
            "outputs": [
                {
                    "name": "output",
                    "datatype": "FP32",
                    "shape": [batch, CLASSES],
                    "parameters": {"binary_data_size": scores.nbytes},
                }
            ],
        }
    ).encode()
    return f"{BINARY};json-header-size={len(header)}", header + scores.tobytes()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not (self.path.startswith("/endpoints/") and self.path.endswith("/invocations")):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        content_type, body = logits_reply(1)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class InvokeStub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> InvokeStub:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()
        self.server_close()
