"""Shared by the client tests and the tools that call models: archive keys, test images, token ids."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from triton_mme.client.payloads import BINARY_CONTENT_TYPE, HEADER_SIZE_PARAMETER, triton_datatype

# A binary reply's content type, less the header size that ends it.
BINARY_PREFIX = f"{BINARY_CONTENT_TYPE};{HEADER_SIZE_PARAMETER}="
RESNET_KEY = "resnet50-onnx-0123456789abcdef.tar.gz"
ROBERTA_KEY = "roberta-large-onnx-fedcba9876543210.tar.gz"
SEQUENCE_LENGTH = 16
TOKEN_IDS = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "hello": 4, "world": 5, "triton": 6}


def triton_binary_reply(
    outputs: Mapping[str, np.ndarray], *, model_name: str | None = RESNET_KEY
) -> tuple[str, bytes]:
    """A reply as Triton's SageMaker listener writes it: (content type with the JSON header's size, the JSON
    header naming each output's binary_data_size followed by the outputs' raw bytes)."""
    named = {"model_name": model_name, "model_version": "1"} if model_name is not None else {}
    header = {
        **named,
        "outputs": [
            {
                "name": name,
                "datatype": triton_datatype(array),
                "shape": list(array.shape),
                "parameters": {"binary_data_size": array.nbytes},
            }
            for name, array in outputs.items()
        ],
    }
    encoded = json.dumps(header).encode()
    return f"{BINARY_PREFIX}{len(encoded)}", encoded + b"".join(array.tobytes() for array in outputs.values())


class LoopbackHandler(BaseHTTPRequestHandler):
    """The handler of a test's loopback server: `answer` writes one whole reply; nothing is logged."""

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(
        self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for key, value in {"Content-Type": content_type, **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 with `handler` while the block runs; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_image(path: Path, size: tuple[int, int] = (320, 240), seed: int = 0) -> Path:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path
