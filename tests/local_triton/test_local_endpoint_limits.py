"""The local endpoint's bounds on slow, many, cross-site and ambiguously framed requests, on raw sockets, and
on the model instances of its loaded archives; without a tritonserver (fake routes behind the real cache)."""

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
from tiny_archives import BuiltArchive, build_config, counted_archive
from tritonclient.grpc import model_config_pb2 as mc

from triton_mme.client.triton_routes import Reply, SageMakerRoutes
from triton_mme.core.formats import Format
from triton_mme.local_triton.loader import ModelCache, list_archives
from triton_mme.local_triton.proxy import LocalEndpoint
from triton_mme.local_triton.standin import instance_count, read_config, rewrite_config


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


def _groups(*counts: int) -> mc.ModelConfig:
    config = build_config(Format.ONNX)
    del config.instance_group[:]
    for count in counts:
        config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_GPU, count=count)
    return config


def test_the_stand_in_clamps_instances_to_the_budget_and_says_so() -> None:
    rewritten, _, _, changes = rewrite_config(_groups(3, 3, 3), where="m", max_instances=4)

    assert [group.count for group in rewritten.instance_group] == [3, 1]
    assert instance_count(rewritten) == 4
    assert (
        "instance_group: 9 instances -> 4, the local endpoint's instance budget (each instance is a python "
        "backend process; instance_group[1].count 3 -> 1, instance_group[2] removed)"
    ) in changes
    unclamped, _, _, kept = rewrite_config(_groups(2, 0), where="m", max_instances=4)
    assert [group.count for group in unclamped.instance_group] == [2, 0]
    assert not any(change.startswith("instance_group:") for change in kept)


class CountingRoutes(SageMakerRoutes):
    """Triton's loads and unloads, counting the instances (stub processes) the loaded models hold."""

    def __init__(self) -> None:
        super().__init__(lambda timeout_s: http.client.HTTPConnection("127.0.0.1", 1))
        self.lock = threading.Lock()
        self.running: dict[str, int] = {}
        self.most = 0

    def load(self, name: str, url: Path) -> Reply:
        config = read_config(next(url.iterdir()))
        with self.lock:
            self.running[name] = instance_count(config)
            self.most = max(self.most, sum(self.running.values()))
        time.sleep(0.01)
        return Reply(200, "application/json", b"{}")

    def unload(self, name: str) -> Reply:
        with self.lock:
            self.running.pop(name)
        return Reply(200, "application/json", b"{}")

    def invoke(self, name: str, body: bytes, content_type: str) -> Reply:
        return Reply(200 if name in self.running else 404, "application/json", b"{}")


@pytest.fixture(scope="module")
def sixteen_each(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Eight archives of one instance group of 16 (the most config_bounds allows), three of 3 + 2."""
    out = tmp_path_factory.mktemp("counted")
    source = built[1]["tiny-cnn/onnx"].path
    for index in range(8):
        counted_archive(out, source, tmp_path_factory.mktemp("work"), name=f"sixteen-{index}", counts=(16,))
    for index in range(3):
        counted_archive(out, source, tmp_path_factory.mktemp("work"), name=f"small-{index}", counts=(3, 2))
    return out


def test_archives_of_16_instances_never_hold_more_than_the_instance_budget(
    sixteen_each: Path, tmp_path: Path
) -> None:
    routes, reports = CountingRoutes(), []
    cache = ModelCache(
        models_dir=sixteen_each,
        scratch_dir=tmp_path / "scratch",
        routes=routes,
        budget=8,
        instance_budget=6,
        report=reports.append,
    )
    names = list_archives(sixteen_each)
    requests = [name for _ in range(3) for name in names]
    workers = [
        threading.Thread(target=lambda n=name: cache.invoke(n, b"{}", "application/json"))
        for name in requests
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert routes.most <= 6
    assert cache.instances == sum(routes.running.values()) <= 6
    big = next(name for name in names if name.startswith("sixteen-0"))
    assert any(
        line.startswith(f"{big}: instance_group: 16 instances -> 6, the local endpoint's instance budget")
        for line in reports
    )
    assert any("unloaded (least recently used; instance budget 6, " in line for line in reports)


def test_past_the_instance_budget_the_least_recently_used_goes_first(
    sixteen_each: Path, tmp_path: Path
) -> None:
    routes = CountingRoutes()
    cache = ModelCache(
        models_dir=sixteen_each,
        scratch_dir=tmp_path / "scratch",
        routes=routes,
        budget=8,
        instance_budget=10,
        report=lambda _: None,
    )
    names = list_archives(sixteen_each)
    small = [name for name in names if name.startswith("small-")]  # 5 instances each
    big = next(name for name in names if name.startswith("sixteen-"))
    cache.ensure_loaded(small[0])
    cache.ensure_loaded(small[1])
    cache.ensure_loaded(small[0])  # used again: small[1] is now the least recently used
    cache.ensure_loaded(small[2])
    assert cache.loaded == [small[0], small[2]]
    cache.ensure_loaded(big)  # 16 asked, 10 allowed: both small ones go before it loads
    assert cache.loaded == [big]
    assert routes.most <= 10 and cache.instances == 10


@pytest.mark.parametrize(
    ("request_bytes", "status", "error"),
    [
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "Request-URI Too Long"),
        (b"BREW /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501, "Unsupported method ('BREW')"),
        (b"GET /ping HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", 505, "Invalid HTTP version (9.9)"),
    ],
    ids=["long-request-line", "unknown-method", "bad-version"],
)
def test_http_servers_own_refusals_are_one_json_line(
    serve: Callable[..., LocalEndpoint], request_bytes: bytes, status: int, error: str
) -> None:
    assert _exchange(serve(), request_bytes) == (status, {"error": error})
