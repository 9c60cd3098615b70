"""Triton's SageMaker listener: the multi-model routes the platform calls, as one client.

`POST /models {"model_name", "url"}` loads the model directory under `url` under that name,
`POST /models/<name>/invoke` runs it, `DELETE /models/<name>` unloads it, `GET /models` lists the loaded
ones and `GET /ping` answers once the server is up (Triton's `src/sagemaker_server.cc`, started by the
image's `docker/sagemaker/serve`). The local endpoint and the serving check both speak to Triton through
this client; it uses only the standard library, so the serving check's runner ships it as it is.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from triton_mme.core.bounded import load_json
from triton_mme.core.errors import printable
from triton_mme.core.limits import MAX_REPLY_BYTES

LOOPBACK = "127.0.0.1"
# SageMaker answers InvokeEndpoint with ModelNotReadyException after 60 s and keeps loading the model for
# up to 360 s (model_loading_limit_seconds, core.platform; AWS, "Invoke a multi-model endpoint", section
# "Retry Requests on ModelNotReadyException Errors"). A load here waits longer than that, so that no load the
# platform would finish is cut short (a build runner's GPU may be slower than the endpoint's); how long a
# load took is measured and reported by the caller.
LOAD_TIMEOUT_S = 600.0
INVOKE_TIMEOUT_S = 300.0
PING_TIMEOUT_S = 2.0
Connect = Callable[[float], http.client.HTTPConnection]


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    cache_hit: bool | None = None  # for an invocation of the local endpoint: whether its model was loaded

    @property
    def ok(self) -> bool:
        return self.status == 200

    def error_line(self) -> str:
        """Triton's error text (`{"error": "..."}`) on one line, or the HTTP status."""
        try:
            text = str(load_json(self.body, where="the reply", max_bytes=MAX_REPLY_BYTES)["error"])
        except (ValueError, KeyError, TypeError):
            text = self.body.decode(errors="replace")
        return printable(" ".join(text.split())) or f"HTTP {self.status}"


class SageMakerRoutes:
    """The multi-model routes over connections from `connect` (a timeout in seconds -> an HTTP connection):
    `TritonServer.connection` for the isolated local server, or `at_port` for a listener on loopback."""

    def __init__(self, connect: Connect):
        self.connect = connect

    @classmethod
    def at_port(cls, port: int) -> SageMakerRoutes:
        return cls(lambda timeout_s: http.client.HTTPConnection(LOOPBACK, port, timeout=timeout_s))

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        *,
        content_type: str = "application/json",
        timeout_s: float = 30.0,
    ) -> Reply:
        connection = self.connect(timeout_s)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": content_type})
            response = connection.getresponse()
            return Reply(response.status, response.getheader("Content-Type", ""), response.read())
        finally:
            connection.close()

    def load(self, name: str, url: Path) -> Reply:
        body = json.dumps({"model_name": name, "url": str(url)}).encode()
        return self.request("POST", "/models", body, timeout_s=LOAD_TIMEOUT_S)

    def unload(self, name: str) -> Reply:
        return self.request("DELETE", f"/models/{name}", timeout_s=LOAD_TIMEOUT_S)

    def invoke(self, name: str, body: bytes, content_type: str) -> Reply:
        return self.request(
            "POST", f"/models/{name}/invoke", body, content_type=content_type, timeout_s=INVOKE_TIMEOUT_S
        )

    def ping(self) -> bool:
        try:
            return self.request("GET", "/ping", timeout_s=PING_TIMEOUT_S).ok
        except OSError:
            return False
