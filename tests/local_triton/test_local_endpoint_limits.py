"""The local endpoint's bounds on slow, many, cross-site and ambiguously framed requests, on raw sockets and
without a tritonserver (the routes behind the cache answer nothing, /ping answers at once)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.local_triton.loader import ModelCache
from triton_mme.local_triton.proxy import LocalEndpoint


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., LocalEndpoint]]:
    (tmp_path / "models").mkdir()
    routes = SageMakerRoutes(lambda timeout_s: http.client.HTTPConnection("127.0.0.1", 1))
    cache = ModelCache(
        models_dir=tmp_path / "models", scratch_dir=tmp_path / "scratch", routes=routes, budget=1,
        report=lambda _: None,
    )  # fmt: skip
    servers: list[LocalEndpoint] = []

    def start(*, background: bool = True, **options: Any) -> LocalEndpoint:
        server = LocalEndpoint(cache, port=0, ping=lambda: True, **options)
        servers.append(server)
        if background:
            server.start_in_background()
        return server

    yield start
    for server in servers:
        server.stop()


def _connect(server: LocalEndpoint, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=timeout)


def _answer(connection: socket.socket) -> tuple[int, Any]:
    response = http.client.HTTPResponse(connection)
    response.begin()
    body = response.read()
    return response.status, json.loads(body) if body else None


def _exchange(server: LocalEndpoint, request: bytes) -> tuple[int, Any]:
    with _connect(server) as connection:
        connection.sendall(request)
        return _answer(connection)


PING = b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_head_sent_a_byte_at_a_time_is_cut_at_its_deadline(serve: Callable[..., LocalEndpoint]) -> None:
    server = serve(head_deadline_s=1.0)
    with _connect(server) as connection:
        started = time.monotonic()
        answer: list[tuple[int, Any]] = []
        reader = threading.Thread(target=lambda: answer.append(_answer(connection)))
        reader.start()
        for byte in PING[:-2]:  # each byte well within the 60 s idle timeout, never the blank line
            try:
                connection.send(bytes([byte]))
            except OSError:
                break
            if not reader.is_alive():
                break
            time.sleep(0.1)
        reader.join(timeout=10)
    assert answer == [(408, {"error": "the request line and headers did not arrive within 1 s"})]
    assert time.monotonic() - started < 3


def test_a_body_sent_slowly_is_cut_at_its_deadline(serve: Callable[..., LocalEndpoint]) -> None:
    server = serve(body_deadline_s=1.0)
    with _connect(server) as connection:
        connection.sendall(b"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")
        started = time.monotonic()
        for _ in range(5):
            connection.send(b"x")
            time.sleep(0.1)
        status, body = _answer(connection)
    assert (status, body) == (408, {"error": "the request body did not arrive within 1 s"})
    assert time.monotonic() - started < 3


def test_a_client_is_served_while_every_slot_holds_a_slow_head(serve: Callable[..., LocalEndpoint]) -> None:
    server = serve()  # MAX_CONNECTIONS, the 10 s head deadline
    slow = [_connect(server, timeout=2) for _ in range(server.max_connections + 44)]
    stop = threading.Event()

    def trickle() -> None:
        for connection in slow:
            with contextlib.suppress(OSError):
                connection.send(b"GET /ping HTTP/1.1\r\n")
        while not stop.wait(0.5):
            for connection in slow:
                with contextlib.suppress(OSError):
                    connection.send(b"X")

    trickling = threading.Thread(target=trickle)
    trickling.start()
    try:
        time.sleep(1.0)
        started = time.monotonic()
        assert _exchange(server, PING) == (200, {"ready": True})
        assert time.monotonic() - started < 3
        # The slow connections closed to make room were told why, in one line.
        evicted = slow[0]
        evicted.settimeout(3)
        assert _answer(evicted)[0] == 503
    finally:
        stop.set()
        trickling.join()
        for connection in slow:
            connection.close()


def test_a_burst_of_connections_waits_in_the_listen_backlog(serve: Callable[..., LocalEndpoint]) -> None:
    server = serve(background=False)
    answers: list[object] = []

    def client() -> None:
        try:
            # A connect the kernel drops (a full backlog) is retried after 1 s: past this timeout.
            with _connect(server, timeout=0.5) as connection:
                connection.settimeout(10)
                connection.sendall(PING)
                answers.append(_answer(connection)[0])
        except OSError as error:
            answers.append(repr(error))

    clients = [threading.Thread(target=client) for _ in range(64)]
    for thread in clients:
        thread.start()
    time.sleep(0.3)  # every connect is made before the first accept
    server.start_in_background()
    for thread in clients:
        thread.join()
    assert answers == [200] * 64


@pytest.mark.parametrize(
    ("header", "error"),
    [
        (
            "Origin: https://attacker.example",
            "Origin 'https://attacker.example' is not allowed; allowed "
            "http://127.0.0.1[:port], http://localhost[:port], http://[::1][:port]",
        ),
        (
            "Origin: null",
            "Origin 'null' is not allowed; allowed http://127.0.0.1[:port], "
            "http://localhost[:port], http://[::1][:port]",
        ),
        (
            "Origin: http://127.0.0.1.attacker.example",
            "Origin 'http://127.0.0.1.attacker.example' is not "
            "allowed; allowed http://127.0.0.1[:port], http://localhost[:port], http://[::1][:port]",
        ),
        ("Sec-Fetch-Site: cross-site", "Sec-Fetch-Site 'cross-site' is not allowed: a page of another site"),
    ],
    ids=["web-origin", "null-origin", "lookalike-origin", "cross-site-fetch"],
)
def test_a_request_from_a_page_of_another_site_is_403(
    serve: Callable[..., LocalEndpoint], header: str, error: str
) -> None:
    server = serve()
    # A no-cors simple POST: text/plain, which a browser sends without a preflight.
    request = (
        "POST /models/m/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
        f"{header}\r\nContent-Length: 2\r\n\r\n{{}}"
    )
    assert _exchange(server, request.encode()) == (403, {"error": error})


@pytest.mark.parametrize(
    "header",
    ["Origin: http://127.0.0.1:8080", "Origin: http://localhost", "Origin: http://[::1]:3000",
     "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: none"],
)  # fmt: skip
def test_a_request_from_a_loopback_page_passes(serve: Callable[..., LocalEndpoint], header: str) -> None:
    server = serve()
    request = f"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}\r\n\r\n"
    assert _exchange(server, request.encode()) == (200, {"ready": True})


@pytest.mark.parametrize(
    ("headers", "status", "error"),
    [
        ("Content-Length: 2\r\nContent-Length: 2", 400, "2 Content-Length headers; allowed one"),
        ("Content-Length: 2\r\nContent-Length: 200", 400, "2 Content-Length headers; allowed one"),
        ("Transfer-Encoding: chunked", 411, "Transfer-Encoding is not supported; send Content-Length"),
        ("Transfer-Encoding: chunked\r\nContent-Length: 2", 400,
         "Transfer-Encoding and Content-Length together are not allowed"),
    ],
    ids=["duplicate", "conflicting", "chunked", "chunked-and-length"],
)  # fmt: skip
def test_a_body_framed_ambiguously_is_refused_in_one_line(
    serve: Callable[..., LocalEndpoint],
    headers: str,
    status: int,
    error: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    server = serve()
    request = f"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
    with _connect(server) as connection:
        connection.sendall(request.encode())
        assert _answer(connection) == (status, {"error": error})
        assert connection.recv(1) == b""  # closed: the unread body is never taken for a request
    assert "Traceback" not in capfd.readouterr().err


def test_a_get_with_a_body_closes_the_connection(serve: Callable[..., LocalEndpoint]) -> None:
    server = serve()
    smuggled = b"DELETE /models/m HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with _connect(server) as connection:
        connection.sendall(
            b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled
        )
        assert _answer(connection) == (200, {"ready": True})
        assert connection.recv(1) == b""
