"""The local endpoint: SageMaker's invoke routes on loopback, in front of Triton's SageMaker listener.

`POST /models/<TargetModel>/invoke` (and `POST /invocations` with the X-Amzn-SageMaker-Target-Model
header, as InvokeEndpoint sends it) loads the archive on first use and forwards the body and Content-Type
unchanged, so KServe v2 JSON and Triton's binary framing both pass through; Triton's status, Content-Type
(with json-header-size) and body come back as they are. Beside them, the stand-in for an inference-component
endpoint's route (`components`).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from triton_mme.client.triton_routes import Reply
from triton_mme.core.errors import printable
from triton_mme.core.numbers import whole_number
from triton_mme.core.platform import PLATFORM
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
# A browser page may call the endpoint only from a page served on loopback: any other Origin (a page on the
# web posting a load with a no-cors text/plain request) and any cross-site fetch are refused.
LOOPBACK_ORIGIN = re.compile(r"http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{1,5})?")
LOOPBACK_ORIGINS = "http://127.0.0.1[:port], http://localhost[:port], http://[::1][:port]"
# A connection that sends nothing for this long is closed. At most MAX_CONNECTIONS are open at once: past it
# the one waiting longest for its request is closed for the new one (none when all are being answered).
IDLE_TIMEOUT_S = 60.0
MAX_CONNECTIONS = 256
# From a request's first byte its line and headers must arrive within HEAD_DEADLINE_S, then its body within
# BODY_DEADLINE_S, whatever the pace of single reads: a byte a minute never holds a connection longer.
HEAD_DEADLINE_S = 10.0
BODY_DEADLINE_S = 30.0
# Connections waiting in the kernel for accept (socketserver's default is 5: a burst of first invokes was
# reset); Linux caps it at net.core.somaxconn.
LISTEN_BACKLOG = 1024


class _TooSlow(TimeoutError):
    """The request did not arrive within its deadline (a TimeoutError, which http.server handles)."""


class _Evicted(TimeoutError):
    """The server closed this connection, still reading its request, to serve a new one."""


class _Connection(io.RawIOBase):
    """A connection's reads: each under the idle timeout, all of a request under its deadlines.

    `reading` is True from the end of one reply until the next request is read whole: only such a connection
    may be evicted (`evict`) when every slot is taken."""

    def __init__(self, sock: socket.socket, *, idle_timeout_s: float, head_deadline_s: float):
        super().__init__()
        self._sock = sock
        self._idle_timeout_s = idle_timeout_s
        self._head_deadline_s = head_deadline_s
        self._deadline: float | None = None
        self._stage, self._limit = "the request line and headers", head_deadline_s
        self.started = False
        self.reading = True
        self.waiting_since = time.monotonic()
        self.evicted = False
        self.refusal: tuple[int, str] | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.evicted:
            raise self._evict_error()
        timeout = self._idle_timeout_s
        if self._deadline is not None:
            timeout = min(timeout, self._deadline - time.monotonic())
            if timeout <= 0:
                raise self._slow_error()
        self._sock.settimeout(timeout)
        try:
            received = self._sock.recv_into(buffer)
        except TimeoutError:
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise self._slow_error() from None
            raise
        if self.evicted:
            raise self._evict_error()
        if received and not self.started:
            self.started = True
            self._deadline = time.monotonic() + self._head_deadline_s
        return received

    def _slow_error(self) -> _TooSlow:
        self.refusal = (HTTPStatus.REQUEST_TIMEOUT, f"{self._stage} did not arrive within {self._limit:g} s")
        return _TooSlow(self.refusal[1])

    def _evict_error(self) -> _Evicted:
        message = "closed for a new connection: every slot was taken and this one had not sent its request"
        self.refusal = (HTTPStatus.SERVICE_UNAVAILABLE, message)
        return _Evicted(message)

    def head_read(self, body_deadline_s: float) -> None:
        """The head is in: the body, if any, has its own deadline from now."""
        self.started = True  # also for a head that was in the buffer, after the previous request
        self._stage, self._limit = "the request body", body_deadline_s
        self._deadline = time.monotonic() + body_deadline_s

    def request_read(self) -> None:
        """The request is in: no deadline while it is served, and no eviction."""
        self.reading = False
        self._deadline = None
        self._sock.settimeout(self._idle_timeout_s)

    def next_request(self) -> None:
        self.reading, self.started, self._deadline = True, False, None
        self._stage, self._limit = "the request line and headers", self._head_deadline_s
        self.waiting_since = time.monotonic()
        self.refusal = None

    def evict(self) -> None:
        self.evicted = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RD)  # a read under way returns at once


class _Handler(BaseHTTPRequestHandler):
    server: LocalEndpoint
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's delayed
    # ACK (40 ms on Linux) on a kept-alive connection.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.reader = self.server.connection_of(self.request)
        self.rfile.close()  # makefile's reader: the socket closes only once every file on it is closed
        self.rfile = io.BufferedReader(self.reader)

    def handle(self) -> None:
        # The client reset or closed its end: there is no one to answer.
        with contextlib.suppress(ConnectionError):
            super().handle()

    def handle_one_request(self) -> None:
        self.reader.next_request()
        # What the reply to a request that never arrived whole needs (http.server sets them while parsing).
        self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
        super().handle_one_request()
        refusal = self.reader.refusal
        if refusal is not None and self.reader.started:
            self.close_connection = True
            self.connection.settimeout(1.0)
            with contextlib.suppress(OSError):
                self._send_json(refusal[0], {"error": refusal[1]})

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        self.reader.head_read(self.server.body_deadline_s)
        refusal = self._refusal()
        if refusal is not None:
            self.close_connection = True
            self._send_json(refusal[0], {"error": refusal[1]})
            return False
        if self.command != "POST" and self.headers.get("Content-Length", "0").strip() != "0":
            self.close_connection = True  # a body no route reads must not be taken for the next request
        return True

    def _refusal(self) -> tuple[int, str] | None:
        """Why the request is refused before any route runs: not addressed to loopback, sent by a page of
        another site, or framed in a way the endpoint does not read unambiguously."""
        host = (self.headers.get("Host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK_HOSTS:
            allowed = ", ".join(sorted(LOOPBACK_HOSTS))
            return HTTPStatus.MISDIRECTED_REQUEST, f"Host {host!r} is not allowed; allowed {allowed}"
        origins = self.headers.get_all("Origin") or []
        for origin in origins:
            if not LOOPBACK_ORIGIN.fullmatch(origin.strip().lower()):
                return HTTPStatus.FORBIDDEN, f"Origin {origin!r} is not allowed; allowed {LOOPBACK_ORIGINS}"
        if (self.headers.get("Sec-Fetch-Site") or "").strip().lower() == "cross-site":
            return HTTPStatus.FORBIDDEN, "Sec-Fetch-Site 'cross-site' is not allowed: a page of another site"
        lengths = self.headers.get_all("Content-Length") or []
        if self.headers.get_all("Transfer-Encoding"):
            if lengths:
                return HTTPStatus.BAD_REQUEST, "Transfer-Encoding and Content-Length together are not allowed"
            return HTTPStatus.LENGTH_REQUIRED, "Transfer-Encoding is not supported; send Content-Length"
        if len(lengths) > 1:
            return HTTPStatus.BAD_REQUEST, f"{len(lengths)} Content-Length headers; allowed one"
        return None

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a request line over 64 KiB, too many headers, an unknown method) as
        the endpoint's one JSON line, not its HTML page; with a status line even where the request's version
        was not read (http.server then writes the body alone)."""
        self.close_connection = True
        self.request_version = self.protocol_version
        self._send_json(code, {"error": printable(message or HTTPStatus(code).phrase)})

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
        if length > PLATFORM.limits.sagemaker_max_payload_bytes.value:
            self.close_connection = True  # the unread body must not be taken for the next request
            self._send_json(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {
                    "error": f"request body of {length:,} bytes; InvokeEndpoint accepts at most "
                    f"{PLATFORM.limits.sagemaker_max_payload_bytes.value:,}"
                },
            )
            return None
        body = self.rfile.read(length)
        self.reader.request_read()
        return body

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
        self.reader.request_read()
        cache = self.server.cache
        if self.path == "/ping":
            ready = self.server.ping()
            self._send_json(HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE, {"ready": ready})
        elif self.path == "/models":
            loaded = cache.loaded
            models = [{"targetModel": n, "loaded": n in loaded} for n in list_archives(cache.models_dir)]
            counts = {"cacheHits": cache.hits, "cacheMisses": cache.misses}
            instances = {"instances": cache.instances, "instanceBudget": cache.instance_budget}
            # The folder served, so `invoke --local` finds its manifest without --manifest.
            served = {"modelsDir": str(cache.models_dir.resolve())}
            self._send_json(
                HTTPStatus.OK,
                {"models": models, "loaded": loaded, "budget": cache.budget, **instances, **counts, **served},
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
        self.reader.request_read()
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
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        cache: ModelCache,
        *,
        port: int,
        ping: Any,
        access_log: bool = False,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        head_deadline_s: float = HEAD_DEADLINE_S,
        body_deadline_s: float = BODY_DEADLINE_S,
    ):
        super().__init__((LOOPBACK, port), _Handler)
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.head_deadline_s = head_deadline_s
        self.body_deadline_s = body_deadline_s
        # Open connections by socket; `_open_lock` guards the dict, read by the accept loop and the handlers.
        self._open: dict[socket.socket, _Connection] = {}
        self._open_lock = threading.Lock()
        self.cache = cache
        self.components = ComponentRoutes(cache.models_dir)
        self.ping = ping
        self.access_log = access_log
        self._thread: threading.Thread | None = None

    def process_request(self, request: Any, client_address: Any) -> None:
        """One thread per connection, up to the bound. Past it the connection that has waited longest for
        its request is closed to make room (all loopback clients share 127.0.0.1, so a bound per address
        would bind them all); when every connection is serving a request, the new one is closed at once."""
        with self._open_lock:
            if len(self._open) >= self.max_connections:
                waiting = [(s, c) for s, c in self._open.items() if c.reading]
                if not waiting:
                    self.shutdown_request(request)
                    return
                oldest, connection = min(waiting, key=lambda item: item[1].waiting_since)
                connection.evict()
                del self._open[oldest]
            self._open[request] = _Connection(
                request, idle_timeout_s=self.idle_timeout_s, head_deadline_s=self.head_deadline_s
            )
        super().process_request(request, client_address)

    def connection_of(self, request: socket.socket) -> _Connection:
        with self._open_lock:
            connection = self._open.get(request)
        if connection is None:  # evicted before its thread started
            connection = _Connection(request, idle_timeout_s=0.0, head_deadline_s=0.0)
            connection.evicted = True
        return connection

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open.pop(request, None)

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
