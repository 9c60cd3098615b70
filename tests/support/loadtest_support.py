"""Loopback stand-ins for what a load test drives: the local endpoint's routes with an LRU of K models, and
SageMaker's InvokeEndpoint with its error answers. They run in the test process; the load test runs in its
own (Locust patches the standard library for gevent when imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from client_support import LoopbackHandler

REPO_ROOT = Path(__file__).resolve().parents[2]


class _Handler(LoopbackHandler):
    server: StubEndpoint
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's delayed
    # ACK (40 ms on Linux) on a kept-alive connection.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        stub = self.server
        with stub.lock:
            answer = {
                "budget": stub.budget,
                "cacheHits": stub.hits,
                "cacheMisses": stub.misses,
                "loaded": list(stub.loaded),
            }
        self.answer(200, "application/json", json.dumps(answer).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = self.path.strip("/").split("/")
        if parts[0] == "models" and len(parts) == 3 and parts[2] == "invoke":
            self._local(unquote(parts[1]))
        elif parts[0] == "endpoints" and parts[-1] == "invocations":
            self._sagemaker(self.headers.get("X-Amzn-SageMaker-Target-Model", ""))
        else:
            self.answer(404, "application/json", b'{"error": "no route"}')

    def _local(self, target: str) -> None:
        stub = self.server
        behaviour = stub.behaviour.get(target)
        if isinstance(behaviour, float):
            time.sleep(behaviour)
        elif isinstance(behaviour, int):
            self.answer(behaviour, "application/json", b'{"error": "as configured"}')
            return
        with stub.lock:
            hit = target in stub.loaded
            if hit:
                stub.loaded.move_to_end(target)
                stub.hits += 1
            else:
                stub.loaded[target] = None
                stub.misses += 1
                while len(stub.loaded) > stub.budget:
                    stub.loaded.popitem(last=False)
        self.answer(
            200, "application/json", b'{"outputs": []}', {"X-Local-Model-Cache": "hit" if hit else "miss"}
        )

    def _sagemaker(self, target: str) -> None:
        behaviour = self.server.behaviour.get(target)
        if behaviour == "not ready":
            body = {"message": "Model is still loading"}
            self.answer(
                429,
                "application/json",
                json.dumps(body).encode(),
                {"x-amzn-ErrorType": "ModelNotReadyException"},
            )
        elif behaviour == 507:
            body = {"Message": "Received server error (507) from model", "OriginalStatusCode": 507}
            self.answer(
                424, "application/json", json.dumps(body).encode(), {"x-amzn-ErrorType": "ModelError"}
            )
        elif isinstance(behaviour, float):
            time.sleep(behaviour)
            self.answer(200, "application/json", b'{"outputs": []}')
        else:
            self.answer(200, "application/json", b'{"outputs": []}')


class StubEndpoint(ThreadingHTTPServer):
    """`behaviour` per TargetModel: an HTTP status to answer, a delay in seconds before answering, or (for
    InvokeEndpoint) "not ready" / 507."""

    daemon_threads = True

    def __init__(self, budget: int = 2, behaviour: dict[str, Any] | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.budget = budget
        self.behaviour = behaviour or {}
        self.loaded: OrderedDict[str, None] = OrderedDict()
        self.hits = self.misses = 0
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (the load test's timeouts, its end) is expected here, not an error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __enter__(self) -> StubEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()
        self.server_close()


def triton_mme(
    *args: str, endpoint_url: str | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`python -m triton_mme ...` in a fresh process (AWS pointed at `endpoint_url` with test credentials)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    if endpoint_url is not None:
        env.update(
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_DEFAULT_REGION="us-east-1",
            AWS_CONFIG_FILE=os.devnull,
            AWS_SHARED_CREDENTIALS_FILE=os.devnull,
            AWS_EC2_METADATA_DISABLED="true",
            AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME=endpoint_url,
        )
    return subprocess.run(
        [sys.executable, "-m", "triton_mme", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
