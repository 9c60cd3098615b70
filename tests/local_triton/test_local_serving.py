"""End to end: archives built by the project's build code, served by the real tritonserver in SageMaker
multi-model mode through the loopback front, answering like their own runtimes."""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tiny_archives import MAX_BATCH_SIZE, BuiltArchive, processes_mentioning

from triton_mme.client.payloads import decode_response, encode_request
from triton_mme.local_triton.proxy import CACHE_HEADER
from triton_mme.local_triton.runner import LocalTriton
from triton_mme.local_triton.server import group_members

pytestmark = pytest.mark.timeout(420)
REQUEST_TIMEOUT_S = 120
Reply = tuple[int, str, bytes]  # status, Content-Type, body
CPU_ARCHIVES = ["tiny-cnn/onnx", "tiny-cnn/torchscript", "tiny-roberta/onnx", "tiny-roberta/torchscript"]


class Served:
    def __init__(self, local: LocalTriton, archives: dict[str, BuiltArchive], printed: list[str]):
        self.local = local
        self.archives = archives
        self.printed = printed

    def call(
        self, method: str, path: str, body: bytes = b"", content_type: str = "application/json"
    ) -> Reply:
        host, port = self.local.endpoint.server_address[:2]
        connection = http.client.HTTPConnection(str(host), int(port), timeout=REQUEST_TIMEOUT_S)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": content_type})
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read()
        finally:
            connection.close()

    def invoke(
        self, key: str, feeds: dict[str, np.ndarray], *, binary: bool = True
    ) -> tuple[int, str, bytes]:
        archive = self.archives[key]
        outputs = [spec.name for spec in archive.record.outputs]
        request = encode_request(feeds, outputs, binary=binary)
        return self.call("POST", f"/models/{archive.target_model}/invoke", request.body, request.content_type)

    def invoke_sample(self, key: str, batch_size: int = 1) -> int:
        return self.invoke(key, self.archives[key].sample(batch_size))[0]

    def loaded(self) -> list[str]:
        return list(json.loads(self.call("GET", "/models")[2])["loaded"])


@pytest.fixture(scope="module")
def served(built: tuple[Path, dict[str, BuiltArchive]], isolated: None) -> Iterator[Served]:
    models_dir, archives = built
    printed: list[str] = []
    with LocalTriton(models_dir=models_dir, port=0, model_budget=4, report=printed.append) as local:
        yield Served(local, archives, printed)


def test_ping_answers_once_triton_is_ready(served: Served) -> None:
    assert served.call("GET", "/ping")[0] == 200


@pytest.mark.parametrize("key", CPU_ARCHIVES)
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_each_cpu_archive_answers_like_its_own_runtime(
    served: Served, key: str, binary: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    archive = served.archives[key]
    feeds = archive.sample(3)
    status, content_type, body = served.invoke(key, feeds, binary=binary)
    assert status == 200, body
    assert ("json-header-size=" in content_type) == binary
    served_outputs = decode_response(content_type, body)
    expected = archive.reference(feeds, tmp_path_factory.mktemp("reference"))
    assert set(served_outputs) == set(expected)
    for name, value in expected.items():
        assert served_outputs[name].dtype == value.dtype
        np.testing.assert_allclose(served_outputs[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_standin_changes_are_printed_per_target_model(served: Served) -> None:
    assert served.invoke_sample("tiny-cnn/onnx") == 200
    target = served.archives["tiny-cnn/onnx"].target_model
    lines = [line.removeprefix(f"{target}: ") for line in served.printed if line.startswith(f"{target}: ")]
    assert lines[0].startswith("platform 'onnxruntime_onnx' -> backend 'python'")
    assert "instance_group[0].kind: KIND_GPU -> KIND_CPU (count 1 kept)" in lines
    assert any(line.startswith("loaded (onnx) in ") for line in lines)


def test_a_batch_above_max_batch_size_is_refused_by_triton(served: Served) -> None:
    key = "tiny-roberta/onnx"
    status, _, body = served.invoke(key, served.archives[key].sample(MAX_BATCH_SIZE + 1))
    assert status == 400
    assert f"batch-size must be <= {MAX_BATCH_SIZE}" in json.loads(body)["error"]


def test_an_unknown_target_model_is_404(served: Served) -> None:
    status, _, body = served.call("POST", "/models/missing-onnx-0000000000000000.tar.gz/invoke", b"{}")
    assert status == 404
    assert "no archive 'missing-onnx-0000000000000000.tar.gz'" in json.loads(body)["error"]


def test_a_tensorrt_archive_is_refused_as_not_runnable_on_cpu(served: Served) -> None:
    status, _, body = served.invoke("tiny-cnn/tensorrt", served.archives["tiny-cnn/onnx"].sample(1))
    assert status == 400
    assert "not runnable in the local CPU Triton" in json.loads(body)["error"]
    assert served.archives["tiny-cnn/tensorrt"].target_model not in served.loaded()


def test_an_archive_triton_cannot_load_is_400_with_the_reason(served: Served) -> None:
    target = served.archives["mismatched/onnx"].target_model
    status, _, body = served.invoke("mismatched/onnx", served.archives["tiny-cnn/onnx"].sample(1))
    assert status == 400
    error = json.loads(body)["error"]
    assert error.startswith(f"{target}: Triton did not load it: ")
    assert "tensor 'not_in_the_graph' of config.pbtxt is not in model.onnx" in error
    assert target not in served.loaded()


def test_unload_then_the_next_invocation_loads_again(served: Served) -> None:
    target = served.archives["tiny-cnn/torchscript"].target_model
    assert served.invoke_sample("tiny-cnn/torchscript") == 200
    assert served.call("DELETE", f"/models/{target}")[0] == 200
    assert target not in served.loaded()
    assert served.call("DELETE", f"/models/{target}")[0] == 404
    assert served.invoke_sample("tiny-cnn/torchscript", 2) == 200
    assert target in served.loaded()


def test_each_reply_says_whether_its_model_was_loaded_and_the_front_counts_both(served: Served) -> None:
    archive = served.archives["tiny-roberta/onnx"]
    served.call("DELETE", f"/models/{archive.target_model}")  # cold, whatever ran before
    request = encode_request(archive.sample(1), [spec.name for spec in archive.record.outputs], binary=True)
    host, port = served.local.endpoint.server_address[:2]

    def invoke() -> str | None:
        connection = http.client.HTTPConnection(str(host), int(port), timeout=REQUEST_TIMEOUT_S)
        try:
            headers = {"Content-Type": request.content_type}
            connection.request("POST", f"/models/{archive.target_model}/invoke", request.body, headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            return response.getheader(CACHE_HEADER)
        finally:
            connection.close()

    before = json.loads(served.call("GET", "/models")[2])
    assert [invoke(), invoke(), invoke()] == ["miss", "hit", "hit"]
    after = json.loads(served.call("GET", "/models")[2])
    assert after["cacheMisses"] - before["cacheMisses"] == 1
    assert after["cacheHits"] - before["cacheHits"] == 2
    # A refused request is no cache answer: no header, no count.
    status = served.call("POST", "/models/absent-onnx-0000000000000000.tar.gz/invoke", request.body)[0]
    assert status == 404
    assert json.loads(served.call("GET", "/models")[2])["cacheHits"] == after["cacheHits"]


def test_a_kept_alive_connection_gets_its_replies_without_a_delayed_ack_stall(served: Served) -> None:
    # The front writes headers and body separately; with Nagle's algorithm on, every reply on a kept-alive
    # connection would wait for the client's delayed ACK (40 ms on Linux).
    archive = served.archives["tiny-cnn/onnx"]
    request = encode_request(archive.sample(1), [spec.name for spec in archive.record.outputs], binary=True)
    host, port = served.local.endpoint.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=REQUEST_TIMEOUT_S)
    seconds = []
    try:
        for _ in range(12):
            started = time.perf_counter()
            headers = {"Content-Type": request.content_type}
            connection.request("POST", f"/models/{archive.target_model}/invoke", request.body, headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            seconds.append(time.perf_counter() - started)
    finally:
        connection.close()
    assert sorted(seconds[2:])[len(seconds[2:]) // 2] < 0.035


def test_past_the_budget_the_least_recently_used_models_are_unloaded(served: Served) -> None:
    served.local.cache.budget = 2
    first, second, third = "tiny-cnn/onnx", "tiny-cnn/torchscript", "copy/onnx"
    for key in (first, second, first):  # the second is now the least recently used
        assert served.invoke_sample(key) == 200
    assert served.invoke_sample(third) == 200
    names = {key: served.archives[key].target_model for key in (first, second, third)}
    assert served.loaded() == [names[first], names[third]]
    assert f"{names[second]}: unloaded (least recently used; budget 2)" in served.printed
    # Unloaded means gone from Triton too, not only from the bookkeeping.
    in_triton = json.loads(served.local.cache.routes.request("GET", "/models").body)["models"]
    assert {m["modelName"] for m in in_triton} == {names[first], names[third]}


def _tritonserver_pid(served: Served) -> int:
    launcher = served.local.triton.pid
    assert launcher is not None
    (pid,) = [
        pid
        for pid in group_members(launcher)
        if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bin/tritonserver")
    ]
    return pid


def _listening(net: Path) -> dict[int, str]:
    """Listening TCP sockets of the network namespace `net` shows (/proc/<pid>/net): inode -> address."""
    found = {}
    for table in ("tcp", "tcp6"):
        for line in (net / table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                found[int(fields[9])] = fields[1]
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(int(target.removeprefix("socket:[").removesuffix("]")))
    return inodes


def test_tritons_listener_lives_in_a_network_namespace_with_only_loopback(served: Served) -> None:
    triton = _tritonserver_pid(served)
    assert os.readlink(f"/proc/{triton}/ns/net") != os.readlink("/proc/self/ns/net")
    interfaces = [
        line.split(":")[0].strip() for line in Path(f"/proc/{triton}/net/dev").read_text().splitlines()[2:]
    ]
    assert interfaces == ["lo"]
    # The SageMaker listener binds every interface of its namespace (0.0.0.0:8080), which is loopback only ...
    sockets = _socket_inodes(triton)
    inside = {
        address for inode, address in _listening(Path(f"/proc/{triton}/net")).items() if inode in sockets
    }
    assert "00000000:1F90" in inside
    # ... and none of Triton's sockets listens in the namespace every other process on the machine shares.
    assert not sockets & set(_listening(Path("/proc/self/net")))


def test_the_front_offers_no_load_route(served: Served) -> None:
    """Triton's `POST /models {"url": ...}` loads and runs any directory; the front never forwards it."""
    body = json.dumps({"model_name": "mine", "url": "/tmp/any-directory"}).encode()
    status, _, reply = served.call("POST", "/models", body)
    assert status == 404 and json.loads(reply) == {"error": "no route POST /models"}
    assert "mine" not in served.loaded()


@pytest.mark.parametrize(
    "target",
    [
        "..%2Fsecret.txt",
        "My%20Model%20(final)%20v2%E2%80%AE.tar.gz",
        "resnet50%0A-onnx-0123456789abcdef.tar.gz",
    ],
)
def test_a_target_model_outside_the_naming_rule_is_400_and_loads_nothing(served: Served, target: str) -> None:
    before = served.loaded()
    status, _, body = served.call("POST", f"/models/{target}/invoke", b"{}")
    assert status == 400
    error = json.loads(body)["error"]
    assert "is not an archive name; allowed <model name>-<onnx|torchscript|tensorrt>-" in error
    assert "\n" not in error
    assert served.loaded() == before


def test_a_body_over_the_invoke_endpoint_limit_is_413_before_it_is_read(served: Served) -> None:
    target = served.archives["tiny-cnn/onnx"].target_model
    host, port = served.local.endpoint.server_address[:2]
    # Only the headers are sent: the answer comes without the server waiting for 6 MiB of body.
    with socket.create_connection((str(host), int(port)), timeout=REQUEST_TIMEOUT_S) as connection:
        connection.sendall(
            f"POST /models/{target}/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Length: 6291457\r\n\r\n".encode()
        )
        response = http.client.HTTPResponse(connection)
        response.begin()
        assert response.status == 413
        assert json.loads(response.read())["error"] == (
            "request body of 6,291,457 bytes; InvokeEndpoint accepts at most 6,291,456"
        )


def test_stop_leaves_no_server_no_stub_and_no_scratch(served: Served) -> None:
    group = served.local.triton.pid
    scratch = served.local.scratch_dir
    assert group is not None
    assert served.invoke_sample("tiny-cnn/onnx") == 200  # a model loaded here: its stub is running
    assert any("triton_python_backend_stub" in p for p in processes_mentioning(str(scratch)))
    served.local.stop()
    assert group_members(group) == []
    assert processes_mentioning(str(scratch)) == []
    assert not scratch.exists()
