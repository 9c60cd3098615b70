"""The SageMaker multi-model routes of Triton's SageMaker listener, as the platform calls them.

`POST /models {"model_name", "url"}` loads the model directory under `url` under that name,
`POST /models/<name>/invoke` runs it and `DELETE /models/<name>` unloads it (Triton's
`sagemaker_server.cc`; the same routes the local Triton serves).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# A load of a large model (RoBERTa-large on a cold GPU) takes tens of seconds; SageMaker itself waits up to
# 360 s for a model to load before it answers ModelNotReadyException.
LOAD_TIMEOUT_S = 600.0
INVOKE_TIMEOUT_S = 300.0
Connect = Callable[[float], http.client.HTTPConnection]


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes

    @property
    def ok(self) -> bool:
        return self.status == 200

    def error_line(self) -> str:
        """The first line of Triton's error text (`{"error": "..."}`), or the HTTP status."""
        try:
            text = str(json.loads(self.body)["error"])
        except (ValueError, KeyError, TypeError):
            text = self.body.decode(errors="replace")
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        return lines[0] if lines else f"HTTP {self.status}"


class MultiModelRoutes:
    """The three routes, over connections from `connect` (a timeout in seconds -> an HTTP connection)."""

    def __init__(self, connect: Connect):
        self.connect = connect

    @classmethod
    def on_loopback(cls, port: int) -> MultiModelRoutes:
        return cls(lambda timeout_s: http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s))

    def _request(self, method: str, path: str, body: bytes, content_type: str, timeout_s: float) -> Reply:
        connection = self.connect(timeout_s)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": content_type})
            response = connection.getresponse()
            return Reply(response.status, response.getheader("Content-Type", ""), response.read())
        finally:
            connection.close()

    def load(self, name: str, url: Path) -> Reply:
        body = json.dumps({"model_name": name, "url": str(url)}).encode()
        return self._request("POST", "/models", body, "application/json", LOAD_TIMEOUT_S)

    def invoke(self, name: str, body: bytes, content_type: str) -> Reply:
        return self._request("POST", f"/models/{name}/invoke", body, content_type, INVOKE_TIMEOUT_S)

    def unload(self, name: str) -> Reply:
        return self._request("DELETE", f"/models/{name}", b"", "application/json", LOAD_TIMEOUT_S)

    def ping(self) -> bool:
        try:
            return self._request("GET", "/ping", b"", "application/json", 2.0).ok
        except OSError:
            return False
