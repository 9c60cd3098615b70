"""The one client of Triton's SageMaker routes: what it sends, how long it waits, how it reads an error."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_support import LoopbackHandler, loopback_server

from triton_mme.client.triton_routes import (
    INVOKE_TIMEOUT_S,
    LOAD_TIMEOUT_S,
    LOOPBACK,
    Reply,
    SageMakerRoutes,
)
from triton_mme.core.platform import PLATFORM


class _Recorder(LoopbackHandler):
    seen: list[tuple[str, str, str, bytes]] = []

    def _record(self) -> None:
        self.seen.append((self.command, self.path, self.headers["Content-Type"], self.read_body()))
        status = 400 if "/broken" in self.path else 200
        error = {"error": "failed to load\n  'broken':\tbad config"}
        self.answer(status, "application/json", json.dumps(error if status == 400 else {}).encode())

    do_GET = do_POST = do_DELETE = _record


@pytest.fixture
def listener() -> Iterator[int]:
    _Recorder.seen = []
    with loopback_server(_Recorder) as url:
        yield int(url.rpartition(":")[2])


def test_a_load_waits_longer_than_sagemaker_keeps_loading_and_an_invocation_longer_than_invoke_endpoint() -> (
    None
):
    assert PLATFORM.limits.model_loading_limit_seconds.value < LOAD_TIMEOUT_S
    assert PLATFORM.limits.invoke_endpoint_timeout_seconds.value < INVOKE_TIMEOUT_S


def test_the_routes_send_what_triton_s_sagemaker_listener_reads(listener: int, tmp_path: Path) -> None:
    timeouts: list[float] = []

    def connect(timeout_s: float) -> http.client.HTTPConnection:
        timeouts.append(timeout_s)
        return http.client.HTTPConnection(LOOPBACK, listener, timeout=timeout_s)

    routes = SageMakerRoutes(connect)
    assert routes.load("m.tar.gz", tmp_path).ok
    assert routes.invoke("m.tar.gz", b"\x00\x01", "application/octet-stream").ok
    assert routes.unload("m.tar.gz").ok
    assert routes.ping()
    assert [(method, path, kind) for method, path, kind, _ in _Recorder.seen] == [
        ("POST", "/models", "application/json"),
        ("POST", "/models/m.tar.gz/invoke", "application/octet-stream"),
        ("DELETE", "/models/m.tar.gz", "application/json"),
        ("GET", "/ping", "application/json"),
    ]
    assert json.loads(_Recorder.seen[0][3]) == {"model_name": "m.tar.gz", "url": str(tmp_path)}
    assert _Recorder.seen[1][3] == b"\x00\x01"
    assert timeouts[:3] == [LOAD_TIMEOUT_S, INVOKE_TIMEOUT_S, LOAD_TIMEOUT_S]


def test_triton_s_error_text_is_read_as_one_line(listener: int) -> None:
    reply = SageMakerRoutes.at_port(listener).invoke("broken", b"", "application/json")
    assert reply.status == 400
    assert reply.error_line() == "failed to load 'broken': bad config"


def test_an_error_without_triton_s_json_falls_back_to_the_body_then_the_status() -> None:
    assert Reply(502, "text/plain", b"bad\ngateway").error_line() == "bad gateway"
    assert Reply(503, "", b"").error_line() == "HTTP 503"


def test_ping_is_false_while_nothing_listens() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: connections to it are refused
        probe.bind((LOOPBACK, 0))
        port = int(probe.getsockname()[1])
    assert not SageMakerRoutes.at_port(port).ping()
