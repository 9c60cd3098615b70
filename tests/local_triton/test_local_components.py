"""The local round trip of both placements: serve-local answers the inference-component stand-in route beside
the multi-model routes, and `triton-mme invoke --local` sends each model where the manifest places it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tiny_archives import BuiltArchive, placed_copy

from triton_mme.cli import main
from triton_mme.client.payloads import decode_response, encode_request
from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest
from triton_mme.core.naming import LOCAL_COMPONENT_ENDPOINT, inference_component_name
from triton_mme.local_triton.components import COMPONENT_HEADER
from triton_mme.local_triton.runner import LocalTriton

pytestmark = pytest.mark.timeout(420)


@pytest.fixture(scope="module")
def placed(built: tuple[Path, dict[str, BuiltArchive]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tiny build whose manifest places tiny-cnn/onnx on an inference component."""
    return placed_copy(built[0], tmp_path_factory.mktemp("placed"))


@pytest.fixture(scope="module")
def local(placed: Path, isolated: None) -> Iterator[LocalTriton]:
    with LocalTriton(models_dir=placed, port=0, model_budget=4, report=lambda _: None) as served:
        yield served


def _post(local: LocalTriton, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    host, port = local.endpoint.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=120)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_invoke_local_routes_a_dedicated_and_a_multi_model_archive(
    local: LocalTriton, placed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = Manifest.read(placed / MANIFEST_FILE_NAME)
    cnn, roberta = manifest.find("tiny-cnn", "onnx"), manifest.find("tiny-roberta", "onnx")
    component = inference_component_name(LOCAL_COMPONENT_ENDPOINT, cnn.name)
    image = tmp_path / "image.npy"
    np.save(image, np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32))
    ids = tmp_path / "ids.npy"
    np.save(ids, np.ones((1, 16), dtype=np.int64))
    common = ["invoke", "--local", local.url, "--manifest", str(placed / MANIFEST_FILE_NAME)]

    assert main([*common, "--model", "tiny-cnn", "--format", "onnx", "--npy", str(image)]) == 0
    assert capsys.readouterr().out.startswith(f"{cnn.target_model} (inference component {component}): binary")
    npy = ["--npy", f"input_ids={ids}", f"attention_mask={ids}"]
    assert main([*common, "--model", "tiny-roberta", "--format", "onnx", *npy]) == 0
    assert capsys.readouterr().out.startswith(f"{roberta.target_model}: binary request")
    assert set(local.cache.loaded) >= {cnn.target_model, roberta.target_model}


def test_invocations_with_the_component_header_reach_the_same_archive(
    local: LocalTriton, placed: Path
) -> None:
    cnn = Manifest.read(placed / MANIFEST_FILE_NAME).find("tiny-cnn", "onnx")
    feeds = {cnn.inputs[0].name: np.zeros((1, 3, 64, 64), dtype=np.float32)}
    request = encode_request(feeds, [spec.name for spec in cnn.outputs], binary=False)
    headers = {
        "Content-Type": request.content_type,
        COMPONENT_HEADER: inference_component_name(LOCAL_COMPONENT_ENDPOINT, cnn.name),
    }
    status, body = _post(local, "/invocations", request.body, headers)
    assert status == 200
    assert decode_response("application/json", body)[cnn.outputs[0].name].shape[0] == 1


@pytest.mark.parametrize(
    ("component", "status", "message"),
    [
        (
            "tiny-roberta-onnx-0000000000000000",
            404,
            "no inference component 'tiny-roberta-onnx-0000000000000000'",
        ),
        ("-x-", 400, "inference component '-x-' is not an inference component name"),
    ],
)
def test_a_component_the_manifest_does_not_place_is_refused_in_one_line(
    local: LocalTriton, component: str, status: int, message: str
) -> None:
    answered, body = _post(
        local, f"/inference-components/{component}/invoke", b"{}", {"Content-Type": "application/json"}
    )
    assert answered == status
    error = json.loads(body)["error"]
    assert error.startswith(message) and "\n" not in error


def test_a_multi_model_archive_is_not_served_on_the_component_route(local: LocalTriton, placed: Path) -> None:
    roberta = Manifest.read(placed / MANIFEST_FILE_NAME).find("tiny-roberta", "onnx")
    path = f"/inference-components/{inference_component_name(LOCAL_COMPONENT_ENDPOINT, roberta.name)}/invoke"
    assert _post(local, path, b"{}", {"Content-Type": "application/json"})[0] == 404


def test_a_local_load_test_calls_both_kinds_without_an_error(
    local: LocalTriton, placed: Path, tmp_path: Path
) -> None:
    from loadtest_support import triton_mme

    traffic = tmp_path / "traffic.yaml"
    traffic.write_text("service_ms: 5\nzipf:\n  total_rate_per_s: 10\n  exponent: 0\n  format: onnx\n")
    out = tmp_path / "loadtest.json"
    before = local.cache.hits + local.cache.misses
    done = triton_mme(
        "loadtest", "--traffic", str(traffic), "--manifest", str(placed / MANIFEST_FILE_NAME),
        "--local", local.url, "--rate", "0", "--users", "2", "--requests", "12", "--out", str(out),
        timeout=360,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    measured = json.loads(out.read_text())["measured"]
    assert sum(measured["errors"].values()) == 0
    called = {m["model"]: m["requests"] for m in measured["models"]}
    assert called["tiny-cnn/onnx"] > 0 and called["tiny-roberta/onnx"] > 0  # the component and the MME
    assert local.cache.hits + local.cache.misses - before >= measured["requests"]
