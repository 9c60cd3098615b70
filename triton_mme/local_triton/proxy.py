"""The local endpoint: SageMaker's invoke routes on loopback, in front of Triton's SageMaker listener.

`POST /models/<TargetModel>/invoke` (and `POST /invocations` with the X-Amzn-SageMaker-Target-Model
header, as InvokeEndpoint sends it) loads the archive on first use and forwards the body and Content-Type
unchanged, so KServe v2 JSON and Triton's binary framing both pass through; Triton's status, Content-Type
(with json-header-size) and body come back as they are. Beside them, the stand-in for an inference-component
endpoint's route (`components`).
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from triton_mme.client.payloads import SAGEMAKER_MAX_REQUEST_BYTES
from triton_mme.client.triton_routes import Reply
from triton_mme.core.numbers import whole_number
from triton_mme.local_triton.components import COMPONENT_HEADER, ComponentRoutes, component_in_path
from triton_mme.local_triton.loader import ModelCache, ModelError, list_archives
from triton_mme.local_triton.server import LOOPBACK

TARGET_MODEL_HEADER = "X-Amzn-SageMaker-Target-Model"
# On every invocation reply: "hit" when the model was loaded as the request arrived, "miss" when the request
# loaded it; SageMaker's ModelCacheHit metric counts the same per request (1 or 0), endpoint-wide.
CACHE_HEADER = "X-Local-Model-Cache"
# Names a browser on this machine uses for the endpoint: any other Host header (a page that rebinds its own
# DNS name to 127.0.0.1) is refused before anything runs.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
# A connection that sends nothing for this long is closed; at most this many are served at once.
IDLE_TIMEOUT_S = 60.0
MAX_CONNECTIONS = 256


class _Handler(BaseHTTPRequestHandler):
    server: LocalEndpoint
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's delayed
    # ACK (40 ms on Linux) on a kept-alive connection.
    disable_nagle_algorithm = True
    # StreamRequestHandler sets it on the socket: a read that waits longer ends the connection.
    timeout = IDLE_TIMEOUT_S

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        host = (self.headers.get("Host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK_HOSTS:
            self.close_connection = True
            self._send_json(
                HTTPStatus.MISDIRECTED_REQUEST,
                {"error": f"Host {host!r} is not allowed; allowed {', '.join(sorted(LOOPBACK_HOSTS))}"},
            )
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.access_log:
            super().log_message(format, *args)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type or "application/json")
        if reply.cache_hit is not None:
            self.send_header(CACHE_HEADER, "hit" if reply.cache_hit else "miss")
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _send_json(self, status: int, payload: object) -> None:
        self._send(Reply(status, "application/json", json.dumps(payload).encode()))

    def _body(self) -> bytes | None:
        """The request body, or None after answering 411/413: never more than InvokeEndpoint accepts."""
        given = self.headers.get("Content-Length") or "0"
        # Digits only ("²" is a digit to str.isdigit(), "+5" to int()), at most core.limits' bound.
        length = whole_number(given) if given.isascii() and given.isdigit() else None
        if length is None:
            self.close_connection = True
            self._send_json(HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length must be a number of bytes"})
            return None
        if length > SAGEMAKER_MAX_REQUEST_BYTES:
            self.close_connection = True  # the unread body must not be taken for the next request
            self._send_json(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {
                    "error": f"request body of {length:,} bytes; InvokeEndpoint accepts at most "
                    f"{SAGEMAKER_MAX_REQUEST_BYTES:,}"
                },
            )
            return None
        return self.rfile.read(length)

    def _route(self) -> tuple[str, str]:
        """(TargetModel, action) from /models/<TargetModel>[/invoke]; ('', '') for other paths."""
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        if len(parts) in (2, 3) and parts[0] == "models" and parts[1]:
            return unquote(parts[1]), "/".join(parts[2:])
        return "", ""

    def _guarded(self, action: Any) -> None:
        try:
            action()
        except ModelError as error:
            self._send_json(error.status, {"error": str(error)})
        except OSError as error:
            self._send_json(HTTPStatus.BAD_GATEWAY, {"error": f"local Triton did not answer: {error}"})

    def do_GET(self) -> None:
        cache = self.server.cache
        if self.path == "/ping":
            ready = self.server.ping()
            self._send_json(HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE, {"ready": ready})
        elif self.path == "/models":
            loaded = cache.loaded
            models = [{"targetModel": n, "loaded": n in loaded} for n in list_archives(cache.models_dir)]
            counts = {"cacheHits": cache.hits, "cacheMisses": cache.misses}
            self._send_json(
                HTTPStatus.OK, {"models": models, "loaded": loaded, "budget": cache.budget, **counts}
            )
        else:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no route GET {self.path}"})

    def do_POST(self) -> None:
        body = self._body()
        if body is None:
            return
        content_type = self.headers.get("Content-Type") or "application/json"
        component = component_in_path(self.path)
        if component is None and self.path == "/invocations":
            component = self.headers.get(COMPONENT_HEADER) or None
        if component is not None:
            self._guarded(lambda: self._invoke_component(component, body, content_type))
            return
        target, action = self._route()
        if self.path == "/invocations":
            target, action = self.headers.get(TARGET_MODEL_HEADER, ""), "invoke"
            if not target:
                self._send_json(HTTPStatus.BAD_REQUEST, {"error": f"missing header {TARGET_MODEL_HEADER}"})
                return
        if not target or action != "invoke":
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no route POST {self.path}"})
            return
        self._guarded(lambda: self._send(self.server.cache.invoke(target, body, content_type)))

    def _invoke_component(self, component: str, body: bytes, content_type: str) -> None:
        target = self.server.components.target_model(component)
        self._send(self.server.cache.invoke(target, body, content_type))

    def do_DELETE(self) -> None:
        target, action = self._route()
        if not target or action:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no route DELETE {self.path}"})
            return

        def unload() -> None:
            if not self.server.cache.unload(target):
                raise ModelError(HTTPStatus.NOT_FOUND, f"'{target}' is not loaded")
            self._send_json(HTTPStatus.OK, {"unloaded": target})

        self._guarded(unload)


class LocalEndpoint(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that plays the SageMaker runtime in front of one local Triton."""

    daemon_threads = True

    def __init__(
        self,
        cache: ModelCache,
        *,
        port: int,
        ping: Any,
        access_log: bool = False,
        max_connections: int = MAX_CONNECTIONS,
    ):
        super().__init__((LOOPBACK, port), _Handler)
        self._connections = threading.BoundedSemaphore(max_connections)
        self.cache = cache
        self.components = ComponentRoutes(cache.models_dir)
        self.ping = ping
        self.access_log = access_log
        self._thread: threading.Thread | None = None

    def process_request(self, request: Any, client_address: Any) -> None:
        """One thread per connection, up to the bound; past it the connection is closed at once."""
        if not self._connections.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"

    def start_in_background(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="local-endpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()
