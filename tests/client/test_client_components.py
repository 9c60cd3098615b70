"""The client routes by the manifest: TargetModel on the multi-model endpoint, InferenceComponentName on the
inference-component endpoint (botocore's Stubber checks the exact parameters), so callers name only the model;
a component that scales to zero explains its failure in one line."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from client_support import RESNET_KEY, ROBERTA_KEY, triton_binary_reply

from triton_mme.cli import main as triton_mme_main
from triton_mme.core.manifest import ComponentPlacement, Manifest
from triton_mme.core.naming import LOCAL_COMPONENT_ENDPOINT, inference_component_name

MME = "triton-mme"
COMPONENTS = "triton-mme-components"
RESNET_COMPONENT = inference_component_name(COMPONENTS, "resnet50")
LOCAL_RESNET_COMPONENT = inference_component_name(LOCAL_COMPONENT_ENDPOINT, "resnet50")


def _invoke(argv: list[str], runtime: Any) -> int:
    with mock.patch("triton_mme.client.invoke.runtime_client", return_value=runtime):
        return triton_mme_main(["invoke", *argv])


def _place_resnet(manifest_path: Path, *, min_copies: int = 1) -> None:
    manifest = Manifest.read(manifest_path)
    placement = ComponentPlacement(min_copies=min_copies)
    archives = tuple(
        a.model_copy(update={"placement": placement}) if a.name == "resnet50" else a
        for a in manifest.archives
    )
    manifest_path.write_text(Manifest(archives=archives).to_json(), encoding="utf-8")


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _reply(stubber: Stubber, expected: dict[str, Any], outputs: dict[str, np.ndarray]) -> None:
    content_type, body = triton_binary_reply(outputs)
    stubber.add_response(
        "invoke_endpoint",
        {"Body": StreamingBody(io.BytesIO(body), len(body)), "ContentType": content_type},
        expected_params=expected,
    )


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_each_model_goes_to_the_endpoint_its_manifest_names(
    runtime: tuple[Any, Stubber], manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, stubber = runtime
    _place_resnet(manifest_path)
    endpoints = ["--endpoint", MME, "--component-endpoint", COMPONENTS, "--manifest", str(manifest_path)]
    scores = np.zeros((1, 1000), dtype=np.float32)
    scores[0, 281] = 9.0
    _reply(
        stubber,
        {"EndpointName": COMPONENTS, "InferenceComponentName": RESNET_COMPONENT,
         "ContentType": mock.ANY, "Body": mock.ANY},
        {"output": scores},
    )  # fmt: skip
    assert _invoke([*endpoints, "--model", "resnet50", "--image", str(image_path)], client) == 0
    out = capsys.readouterr().out
    assert f"{RESNET_KEY} (inference component {RESNET_COMPONENT}):" in out and "tabby (281)" in out

    ids = np.zeros((1, 16), dtype=np.int64)
    _reply(
        stubber,
        {"EndpointName": MME, "TargetModel": ROBERTA_KEY, "ContentType": mock.ANY, "Body": mock.ANY},
        {"last_hidden_state": np.zeros((1, 16, 4), dtype=np.float32)},
    )
    array = manifest_path.parent / "ids.npy"
    np.save(array, ids)
    masks = manifest_path.parent / "mask.npy"
    np.save(masks, ids)
    npy = ["--npy", f"input_ids={array}", f"attention_mask={masks}"]
    assert _invoke([*endpoints, "--model", "roberta-large", *npy], client) == 0
    assert capsys.readouterr().out.startswith(f"{ROBERTA_KEY}: binary request")


def test_a_dedicated_model_without_the_component_endpoint_is_refused_before_sending(
    runtime: tuple[Any, Stubber], manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, _ = runtime  # no response queued: a request would fail the Stubber
    _place_resnet(manifest_path)
    argv = [
        "--endpoint",
        MME,
        "--manifest",
        str(manifest_path),
        "--model",
        "resnet50",
        "--image",
        str(image_path),
    ]
    assert _invoke(argv, client) == 1
    assert _error_line(capsys) == (
        "error: model 'resnet50' is served by an inference component of its own: pass --component-endpoint "
        "NAME (the stack output InferenceComponentEndpointName)"
    )


def test_a_multi_model_archive_without_the_multi_model_endpoint_is_refused(
    runtime: tuple[Any, Stubber], manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, _ = runtime
    argv = ["--component-endpoint", COMPONENTS, "--manifest", str(manifest_path), "--model", "resnet50",
            "--image", str(image_path)]  # fmt: skip
    assert _invoke(argv, client) == 1
    assert _error_line(capsys).startswith(
        f"error: {RESNET_KEY} is served by the multi-model endpoint: pass --endpoint"
    )


@pytest.mark.parametrize(
    ("min_copies", "code", "explained"),
    [(0, "ValidationError", True), (1, "ValidationError", False), (0, "ModelError", False)],
)
@pytest.mark.parametrize("message", ["throttled\nfor now"])
def test_a_failure_of_a_component_that_scales_to_zero_says_what_it_may_be(
    runtime: tuple[Any, Stubber],
    manifest_path: Path,
    image_path: Path,
    capsys: pytest.CaptureFixture[str],
    min_copies: int,
    code: str,
    explained: bool,
    message: str,
) -> None:
    client, stubber = runtime
    _place_resnet(manifest_path, min_copies=min_copies)
    stubber.add_client_error(
        "invoke_endpoint",
        service_error_code=code,
        service_message=message,
        http_status_code=400,
    )
    argv = ["--component-endpoint", COMPONENTS, "--manifest", str(manifest_path), "--model", "resnet50",
            "--image", str(image_path)]  # fmt: skip
    assert _invoke(argv, client) == 1
    err = _error_line(capsys)
    assert err.startswith(f"error: endpoint {COMPONENTS}, inference component {RESNET_COMPONENT}: {code}")
    hint = (
        "it scales to zero (min_copies 0), and while it starts a copy every request fails for several minutes"
    )
    assert (hint in err) is explained
    assert err.endswith("retry in a few minutes") is explained


def test_the_documented_no_capacity_answer_is_named_as_such(
    runtime: tuple[Any, Stubber], manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from triton_mme.core.platform import PLATFORM

    client, stubber = runtime
    _place_resnet(manifest_path, min_copies=0)
    stubber.add_client_error(
        "invoke_endpoint",
        service_error_code=PLATFORM.components.no_capacity_error.code,
        service_message=PLATFORM.components.no_capacity_error.message,
        http_status_code=PLATFORM.components.no_capacity_error.http_status,
    )
    argv = ["--component-endpoint", COMPONENTS, "--manifest", str(manifest_path), "--model", "resnet50",
            "--image", str(image_path)]  # fmt: skip
    assert _invoke(argv, client) == 1
    assert _error_line(capsys).endswith(
        "; it scales to zero (min_copies 0) and has no copy now: its first copy takes several minutes to "
        "start, retry then"
    )


def test_a_dry_run_names_the_route(
    manifest_path: Path, image_path: Path, tmp_path: Path, capsys: Any
) -> None:
    _place_resnet(manifest_path)
    argv = ["--dry-run", str(tmp_path / "out"), "--manifest", str(manifest_path), "--model", "resnet50",
            "--image", str(image_path)]  # fmt: skip
    assert triton_mme_main(["invoke", *argv]) == 0
    assert (
        f"request for {RESNET_KEY} (inference component {LOCAL_RESNET_COMPONENT}):" in capsys.readouterr().out
    )
    assert triton_mme_main(["invoke", *argv, "--component-endpoint", COMPONENTS]) == 0
    assert f"request for {RESNET_KEY} (inference component {RESNET_COMPONENT}):" in capsys.readouterr().out
