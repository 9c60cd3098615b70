"""`triton-mme invoke` end to end: Stubber for InvokeEndpoint, dry runs, a local server."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from client_support import (
    BINARY_PREFIX,
    RESNET_KEY,
    SEQUENCE_LENGTH,
    LoopbackHandler,
    loopback_server,
    triton_binary_reply,
    write_image,
)

from triton_mme.cli import main as triton_mme_main
from triton_mme.client.payloads import encode_binary_request, encode_json_request


def main(argv: list[str], runtime: Any = None) -> int:
    """`triton-mme invoke ...`, with the stubbed sagemaker-runtime client when one is given."""
    if runtime is None:
        return triton_mme_main(["invoke", *argv])
    with mock.patch("triton_mme.client.invoke.runtime_client", return_value=runtime):
        return triton_mme_main(["invoke", *argv])


ENDPOINT = "triton-mme"


def _binary_reply(name: str, array: np.ndarray) -> tuple[str, bytes]:
    return triton_binary_reply({name: array})


def _logits(batch: int) -> np.ndarray:
    scores = np.zeros((batch, 1000), dtype=np.float32)
    scores[:, 281] = 9.0  # tabby
    scores[:, 282] = 7.0  # tiger cat
    return scores


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _stub_invoke(
    stubber: Stubber, *, body: bytes, content_type: str, target: str, reply: tuple[str, bytes]
) -> None:
    reply_type, reply_body = reply
    stubber.add_response(
        "invoke_endpoint",
        {"Body": StreamingBody(io.BytesIO(reply_body), len(reply_body)), "ContentType": reply_type},
        expected_params={
            "EndpointName": ENDPOINT,
            "TargetModel": target,
            "ContentType": content_type,
            "Body": body,
        },
    )


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_image_request_goes_out_in_binary_and_prints_the_top_5(
    runtime: tuple[Any, Stubber], manifest_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, stubber = runtime
    images = [write_image(tmp_path / f"{i}.png", seed=i) for i in range(2)]
    main(
        [
            "--dry-run",
            str(tmp_path / "req"),
            "--model",
            "resnet50",
            "--manifest",
            str(manifest_path),
            "--image",
            *map(str, images),
        ]
    )
    body = (tmp_path / "req" / "body.bin").read_bytes()
    content_type = (tmp_path / "req" / "content-type.txt").read_text().strip()
    _stub_invoke(
        stubber,
        body=body,
        content_type=content_type,
        target=RESNET_KEY,
        reply=_binary_reply("output", _logits(2)),
    )
    capsys.readouterr()

    status = main(
        [
            "--endpoint",
            ENDPOINT,
            "--model",
            "resnet50",
            "--manifest",
            str(manifest_path),
            "--image",
            *map(str, images),
        ],
        runtime=client,
    )

    assert status == 0
    out = capsys.readouterr().out
    assert f"{RESNET_KEY}: binary request {len(body):,} bytes" in out
    assert out.count("1.  ") == 2 and "tabby (281)" in out and "tiger cat (282)" in out
    # What was sent: one FP32 [2, 3, 224, 224] tensor in Triton's binary framing.
    header_size = int(content_type.removeprefix(BINARY_PREFIX))
    header = json.loads(body[:header_size])
    assert header["inputs"][0]["shape"] == [2, 3, 224, 224] and header["inputs"][0]["datatype"] == "FP32"
    assert len(body) - header_size == 2 * 3 * 224 * 224 * 4


def test_npy_request_body_is_byte_exact_in_binary_and_json(
    runtime: tuple[Any, Stubber], manifest_path: Path, tmp_path: Path
) -> None:
    client, stubber = runtime
    batch = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    np.save(tmp_path / "batch.npy", batch)
    binary = encode_binary_request({"input": batch}, ["output"])
    as_json = encode_json_request({"input": batch}, ["output"])
    reply = _binary_reply("output", _logits(1))
    _stub_invoke(stubber, body=binary.body, content_type=binary.content_type, target=RESNET_KEY, reply=reply)
    _stub_invoke(stubber, body=as_json.body, content_type="application/json", target=RESNET_KEY, reply=reply)
    common = [
        "--endpoint",
        ENDPOINT,
        "--target-model",
        RESNET_KEY,
        "--manifest",
        str(manifest_path),
        "--npy",
        str(tmp_path / "batch.npy"),
    ]

    assert main(common, runtime=client) == 0
    assert main([*common, "--json"], runtime=client) == 0

    assert binary.body.endswith(batch.tobytes())
    sent = json.loads(as_json.body)["inputs"][0]
    assert (sent["name"], sent["shape"], sent["datatype"]) == ("input", [1, 3, 224, 224], "FP32")


def test_text_is_tokenised_and_sent_as_int64(
    runtime: tuple[Any, Stubber], manifest_path: Path, tokenizer_dir: Path, tmp_path: Path
) -> None:
    args = [
        "--model",
        "roberta-large",
        "--manifest",
        str(manifest_path),
        "--tokenizer",
        str(tokenizer_dir),
        "--text",
        "hello world",
        "hello triton",
    ]

    assert main(["--dry-run", str(tmp_path), *args]) == 0

    content_type = (tmp_path / "content-type.txt").read_text().strip()
    body = (tmp_path / "body.bin").read_bytes()
    header_size = int(content_type.removeprefix(BINARY_PREFIX))
    header = json.loads(body[:header_size])
    assert [(i["name"], i["datatype"], i["shape"]) for i in header["inputs"]] == [
        ("input_ids", "INT64", [2, SEQUENCE_LENGTH]),
        ("attention_mask", "INT64", [2, SEQUENCE_LENGTH]),
    ]
    tail = np.frombuffer(body[header_size:], dtype=np.int64).reshape(2, 2, SEQUENCE_LENGTH)
    assert tail[0, 0, :3].tolist() == [4, 5, 0] and tail[1, 1, :3].tolist() == [1, 1, 0]
    assert header["outputs"] == [{"name": "last_hidden_state", "parameters": {"binary_data": True}}]


def test_dry_run_writes_body_and_content_type_without_calling_aws(
    manifest_path: Path, image_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "request"

    assert (
        main(
            [
                "--dry-run",
                str(out_dir),
                "--model",
                "resnet50",
                "--manifest",
                str(manifest_path),
                "--image",
                str(image_path),
                "--json",
            ]
        )
        == 0
    )

    assert (out_dir / "content-type.txt").read_text() == "application/json\n"
    request = json.loads((out_dir / "body.bin").read_bytes())
    assert (
        request["inputs"][0]["shape"] == [1, 3, 224, 224]
        and len(request["inputs"][0]["data"]) == 3 * 224 * 224
    )
    assert "JSON request for resnet50-onnx-0123456789abcdef.tar.gz" in capsys.readouterr().out


def test_eight_images_in_json_are_refused_before_sending_and_pass_in_binary(
    runtime: tuple[Any, Stubber],
    manifest_path: Path,
    image_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    client, _ = runtime  # no stubbed response: any call would fail the test
    args = ["--model", "resnet50", "--manifest", str(manifest_path), "--image", *[str(image_path)] * 8]

    assert main(["--endpoint", ENDPOINT, *args, "--json"], runtime=client) == 1
    err = _error_line(capsys)
    assert "over SageMaker's 6,291,456-byte (6 MiB) InvokeEndpoint limit; send it in binary" in err

    assert main(["--dry-run", str(tmp_path), *args]) == 0
    assert 4_800_000 < (tmp_path / "body.bin").stat().st_size < 4_900_000


def test_endpoint_errors_are_one_line(
    runtime: tuple[Any, Stubber], manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, stubber = runtime
    stubber.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message='Received server error (507) from model with message "out of memory".\nSee logs',
        http_status_code=424,
        modeled_fields={"OriginalStatusCode": 507},
    )
    status = main(
        [
            "--endpoint",
            ENDPOINT,
            "--model",
            "resnet50",
            "--manifest",
            str(manifest_path),
            "--image",
            str(image_path),
        ],
        runtime=client,
    )
    assert status == 1
    err = _error_line(capsys)
    assert err.startswith(
        f"error: endpoint {ENDPOINT}: ModelError (model status 507): Received server error (507)"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--model", "bert"],
            "no archive for model 'bert' in the manifest; known: resnet50, roberta-large",
        ),
        (
            ["--model", "resnet50", "--format", "tensorrt"],
            "no archive for model 'resnet50' in format 'tensorrt'",
        ),
        (
            ["--target-model", "unknown-onnx-0000000000000000.tar.gz"],
            "--image needs the model's manifest entry",
        ),
        (["--model", "roberta-large"], "--image: model 'roberta-large' takes 2 inputs, not one image"),
    ],
)
def test_model_resolution_errors_are_one_line(
    manifest_path: Path,
    image_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    argv = [
        "--dry-run",
        str(tmp_path),
        "--manifest",
        str(manifest_path),
        *arguments,
        "--image",
        str(image_path),
    ]
    assert main(argv) == 1
    assert message in _error_line(capsys)
    assert not (tmp_path / "body.bin").exists()


def test_a_batch_above_max_batch_size_is_refused(
    manifest_path: Path, tokenizer_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--dry-run",
        str(tmp_path),
        "--model",
        "roberta-large",
        "--manifest",
        str(manifest_path),
        "--tokenizer",
        str(tokenizer_dir),
        "--text",
        *["hello"] * 5,
    ]
    assert main(argv) == 1
    assert "batch of 5 is above model 'roberta-large' max_batch_size 4" in _error_line(capsys)


def test_a_destination_is_required(
    manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", "resnet50", "--manifest", str(manifest_path), "--image", str(image_path)]) == 1
    assert "--endpoint NAME, --local URL or --dry-run DIR" in _error_line(capsys)


class _CannedTriton(LoopbackHandler):
    """Answers every POST with a fixed Triton binary reply and remembers what it received."""

    received: list[tuple[str, str, bytes]] = []
    reply: tuple[int, str, bytes] = (200, "", b"")

    def do_POST(self) -> None:
        body = self.read_body()
        type(self).received.append((self.path, self.headers["Content-Type"], body))
        self.answer(*type(self).reply)


@pytest.fixture
def local_triton() -> Iterator[type[_CannedTriton]]:
    handler = type("Handler", (_CannedTriton,), {"received": []})
    with loopback_server(handler) as url:
        handler.url = url  # type: ignore[attr-defined]
        yield handler


def test_local_target_posts_the_same_body_to_the_multi_model_route(
    local_triton: Any,
    manifest_path: Path,
    image_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    content_type, reply = _binary_reply("output", _logits(1))
    local_triton.reply = (200, content_type, reply)
    args = ["--model", "resnet50", "--manifest", str(manifest_path), "--image", str(image_path)]
    main(["--dry-run", str(tmp_path), *args])

    assert main(["--local", local_triton.url, *args]) == 0

    ((path, sent_type, sent_body),) = local_triton.received
    assert path == f"/models/{RESNET_KEY}/invoke"
    assert sent_type == (tmp_path / "content-type.txt").read_text().strip()
    assert sent_body == (tmp_path / "body.bin").read_bytes()
    assert "tabby (281)" in capsys.readouterr().out


def test_local_target_reports_server_errors_in_one_line(
    local_triton: Any, manifest_path: Path, image_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local_triton.reply = (400, "application/json", b'{"error":"failed to load model: bad config"}')
    argv = [
        "--local",
        local_triton.url,
        "--model",
        "resnet50",
        "--manifest",
        str(manifest_path),
        "--image",
        str(image_path),
    ]
    assert main(argv) == 1
    assert "HTTP 400: failed to load model: bad config" in _error_line(capsys)


def test_the_module_runs_as_a_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "triton_mme", "invoke", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "--target-model" in result.stdout and "--dry-run" in result.stdout


def test_text_for_an_image_model_points_to_image(
    manifest_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--dry-run", str(tmp_path), "--model", "resnet50", "--manifest", str(manifest_path)]
    assert main([*argv, "--text", "a cat"]) == 1
    assert _error_line(capsys) == (
        "error: --text: model 'resnet50' is an image model; pass --image FILE... instead"
    )
    assert main([*argv[:3], "resnet5", *argv[4:], "--text", "a cat"]) == 1
    assert "did you mean resnet50?" in _error_line(capsys)
