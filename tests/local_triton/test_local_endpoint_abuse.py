"""The local endpoint under abuse, without a tritonserver: a fake SageMaker API behind the real cache and
HTTP front."""

from __future__ import annotations

import http.client
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tiny_archives import BuiltArchive, build_config

from triton_mme.client.triton_routes import Reply, SageMakerRoutes
from triton_mme.core.formats import Format
from triton_mme.local_triton.loader import ModelCache, ModelError
from triton_mme.local_triton.proxy import LocalEndpoint
from triton_mme.local_triton.server import PING_MODE_VARIABLE, TritonServer
from triton_mme.local_triton.standin import rewrite_config


class SlowRoutes(SageMakerRoutes):
    """Loads take `load_s` for `slow`, nothing for the others; invocations answer at once."""

    def __init__(self, slow: str, load_s: float):
        super().__init__(lambda timeout_s: http.client.HTTPConnection("127.0.0.1", 1))
        self.slow, self.load_s = slow, load_s

    def load(self, name: str, url: Path) -> Reply:
        if name == self.slow:
            time.sleep(self.load_s)
        return Reply(200, "application/json", b"{}")

    def unload(self, name: str) -> Reply:
        return Reply(200, "application/json", b"{}")

    def invoke(self, name: str, body: bytes, content_type: str) -> Reply:
        return Reply(200, "application/json", b"{}")


def _cache(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, routes: SageMakerRoutes
) -> ModelCache:
    return ModelCache(
        models_dir=built[0], scratch_dir=tmp_path / "scratch", routes=routes, budget=4, report=lambda _: None
    )


def test_a_loaded_model_does_not_wait_for_another_models_load(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    archives = built[1]
    loaded, slow = archives["tiny-cnn/onnx"].path.name, archives["tiny-roberta/onnx"].path.name
    cache = _cache(built, tmp_path, SlowRoutes(slow, load_s=3.0))
    cache.ensure_loaded(loaded)
    loading = threading.Thread(target=cache.ensure_loaded, args=(slow,))
    loading.start()
    time.sleep(0.5)  # the slow load is under way

    started = time.perf_counter()
    reply = cache.invoke(loaded, b"{}", "application/json")
    waited = time.perf_counter() - started
    loading.join()

    assert reply.cache_hit is True
    assert waited < 1.0


def test_serve_local_refuses_an_archive_whose_name_claims_another_content_hash(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    source = built[1]["tiny-cnn/onnx"].path
    claimed = "tiny-cnn-onnx-0000000000000000.tar.gz"
    shutil.copy(source, models / claimed)
    cache = ModelCache(
        models_dir=models,
        scratch_dir=tmp_path / "scratch",
        routes=SlowRoutes("", 0),
        budget=1,
        report=lambda _: None,
    )

    with pytest.raises(ModelError, match="the name claims content hash 0000000000000000") as caught:
        cache.ensure_loaded(claimed)
    assert caught.value.status == 400
    assert list((tmp_path / "scratch").rglob("*.onnx")) == []


def test_the_stand_in_keeps_only_the_parameters_it_reads() -> None:
    config = build_config(Format.ONNX)
    config.parameters["EXECUTION_ENV_PATH"].string_value = "$$TRITON_MODEL_DIRECTORY/env.tar.gz"

    rewritten, _, _, changes = rewrite_config(config, where="m")

    assert "EXECUTION_ENV_PATH" not in rewritten.parameters
    assert set(rewritten.parameters) <= {"intra_op_thread_count", "inter_op_thread_count", "execution_mode",
                                         "enable_mem_pattern", "enable_mem_arena"}  # fmt: skip
    assert any("EXECUTION_ENV_PATH" in change and "removed" in change for change in changes)


def test_triton_pings_in_live_mode(tmp_path: Path) -> None:
    assert TritonServer(workdir=tmp_path)._environment()[PING_MODE_VARIABLE] == "live"


@pytest.fixture
def endpoint(built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path) -> Any:
    server = LocalEndpoint(
        _cache(built, tmp_path, SlowRoutes("", 0)),
        port=0,
        ping=lambda: True,
        max_connections=2,
        idle_timeout_s=1.0,
    )
    server.start_in_background()
    yield server
    server.stop()


def _get(port: int, path: str, host: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_host_outside_the_loopback_names_is_refused(endpoint: LocalEndpoint) -> None:
    port = endpoint.server_address[1]

    status, body = _get(port, "/models", "attacker.example:80")
    assert status == 421
    assert b"Host 'attacker.example:80' is not allowed; allowed" in body
    assert _get(port, "/ping", f"localhost:{port}")[0] == 200
    assert _get(port, "/ping", f"127.0.0.1:{port}")[0] == 200


def test_idle_connections_are_closed_and_their_number_is_bounded(endpoint: LocalEndpoint) -> None:
    port = endpoint.server_address[1]
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        for connection in idle:
            connection.settimeout(5)
        started = time.monotonic()
        assert idle[0].recv(1) == b""  # past max_connections the longest waiting is closed for the new one
        assert time.monotonic() - started < 0.9
        assert idle[2].recv(1) == b""  # silent for longer than the idle timeout: closed
        time.sleep(0.5)
        assert _get(port, "/ping", f"127.0.0.1:{port}")[0] == 200  # the slots are free again
    finally:
        for connection in idle:
            connection.close()
