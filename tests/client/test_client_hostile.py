"""Every unreadable input, oversized reply and network failure is one line, and nothing is sent twice."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.stub import Stubber
from client_support import RESNET_KEY, LoopbackHandler, loopback_server, triton_binary_reply

from triton_mme.cli import main as triton_mme_main
from triton_mme.client.manifest_source import ManifestError, ManifestSource
from triton_mme.client.payloads import encode_binary_request
from triton_mme.client.transport import ONE_ATTEMPT, TransportError, invoke_endpoint, runtime_client
from triton_mme.core.manifest import ArchiveRecord, Manifest, TensorSpec
from triton_mme.core.naming import companion_file_name

ENDPOINT = "triton-mme"
ROBERTA_LARGE_KEY = "roberta-large-onnx-0123456789abcdef.tar.gz"


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


@pytest.fixture
def runtime() -> Iterator[Any]:
    """A sagemaker-runtime client with no stubbed response: any call to AWS fails the test."""
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        yield client
        stubber.assert_no_pending_responses()


def _invoke(argv: list[str], runtime: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr("triton_mme.client.invoke.runtime_client", lambda _region: runtime)
    return triton_mme_main(["invoke", "--endpoint", ENDPOINT, *argv])


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _png(path: Path, width: int, height: int, extra: bytes = b"") -> Path:
    """A grey PNG compressed row by row: a 20000 x 20000 bomb is 0.4 MB and never held in memory."""
    compressor, parts = zlib.compressobj(9), []
    row = b"\0" * (width + 1)
    for _ in range(height):
        parts.append(compressor.compress(row))
    parts.append(compressor.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = _chunk(b"IHDR", header) + extra + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


def _npz_named_npy(path: Path) -> Path:
    with path.open("wb") as stream:
        np.savez(stream, input=np.ones((1, 3, 224, 224), dtype=np.float32))
    return path


def _header_bomb(path: Path) -> Path:
    """A .npy whose header promises 4 TiB and whose data is 16 bytes."""
    with path.open("wb") as stream:
        header = {"descr": "<f4", "fortran_order": False, "shape": (1_000_000, 3, 224, 224 * 7)}
        np.lib.format.write_array_header_1_0(stream, header)
        stream.write(b"\0" * 16)
    return path


def _object_array(path: Path) -> Path:
    np.save(path, np.array([{"pickled": True}], dtype=object), allow_pickle=True)
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_npz_named_npy, "an .npz archive of arrays; allowed: one .npy array per input (np.save)"),
        (
            lambda p: p.write_bytes(b"PK\x03\x04 a broken zip") and p,
            "an .npz archive of arrays; allowed: one .npy array per input (np.save)",
        ),
        (_header_bomb, "not a readable .npy array (mmap length is greater than file size)"),
        (_object_array, "not a readable .npy array (Array can't be memory-mapped: Python objects in dtype.)"),
        (lambda p: p.write_bytes(b"\x93NUMPY garbage") and p, "not a readable .npy array ("),
        (lambda p: np.save(p, np.ones((1, 3, 224, 224), dtype=np.float64)) or p, "dtype float64, but input"),
        (lambda p: np.save(p, np.ones((1, 3, 64, 64), dtype=np.float32)) or p, "shape [1, 3, 64, 64], but"),
        (
            lambda p: np.save(p, np.ones((11, 3, 224, 224), dtype=np.float32)) or p,
            "the array is 6,623,232 bytes; a request carries at most 6,291,456 (send a smaller batch)",
        ),
        (lambda p: p, "cannot read it (No such file or directory)"),
    ],
    ids=["npz", "broken-zip", "header-bomb", "pickle", "garbage", "dtype", "shape", "oversized", "missing"],
)
def test_an_unreadable_npy_is_one_line_and_nothing_is_sent(
    manifest_path: Path,
    tmp_path: Path,
    runtime: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    make: Any,
    message: str,
) -> None:
    path = tmp_path / "input.npy"
    make(path)
    argv = ["--model", "resnet50", "--manifest", str(manifest_path), "--npy", str(path)]
    assert _invoke(argv, runtime, monkeypatch) == 1
    assert message in _error_line(capsys)


@pytest.mark.parametrize(
    ("size", "extra", "message"),
    [
        ((20000, 20000), b"", "has more than 89,478,485 pixels; allowed up to that many (resize it first)"),
        ((9500, 9500), b"", "has more than 89,478,485 pixels"),  # Pillow warns here; refused all the same
        (
            (8, 8),
            _chunk(b"zTXt", b"Comment\0\0" + zlib.compress(b"A" * 64 * 1024 * 1024, 9)),
            "a damaged or truncated image",  # Pillow's own text-chunk limit
        ),
        ((8, 8), None, "not an image format Pillow reads"),
    ],
    ids=["pixel-bomb", "pixel-warning", "text-bomb", "truncated"],
)
def test_a_decompression_bomb_or_broken_picture_is_one_line_and_nothing_is_sent(
    manifest_path: Path,
    tmp_path: Path,
    runtime: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    size: tuple[int, int],
    extra: bytes | None,
    message: str,
) -> None:
    picture = _png(tmp_path / "picture.png", *size, extra or b"")
    if extra is None:
        picture.write_bytes(picture.read_bytes()[:40])
    assert picture.stat().st_size < 1_000_000
    argv = ["--model", "resnet50", "--manifest", str(manifest_path), "--image", str(picture)]
    assert _invoke(argv, runtime, monkeypatch) == 1
    assert message in _error_line(capsys)


def _labels_manifest(tmp_path: Path, manifest_path: Path, labels: bytes | None) -> Path:
    """The fixture's manifest with a labels file that is missing (None) or holds `labels`."""
    manifest = Manifest.read(manifest_path)
    name = companion_file_name("labels", hashlib.sha256(b"whatever").hexdigest())
    if labels is not None:
        (tmp_path / name).write_bytes(labels)
    record = manifest.find("resnet50").model_copy(update={"files": {"labels": name}})
    path = tmp_path / "labels-manifest.json"
    path.write_text(Manifest(archives=(record,)).to_json(), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (None, "cannot read it (No such file or directory)"),
        (b'{"0": "tabby"}', "not a labels file; allowed: a JSON list of class names"),
        (b"\xff\xfe not json", "not a labels file; allowed: a JSON list of class names"),
    ],
    ids=["missing", "not-a-list", "not-json"],
)
def test_missing_or_invalid_labels_are_one_line_before_anything_is_sent(
    manifest_path: Path,
    image_path: Path,
    tmp_path: Path,
    runtime: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    labels: bytes | None,
    message: str,
) -> None:
    manifest = _labels_manifest(tmp_path, manifest_path, labels)
    argv = ["--model", "resnet50", "--manifest", str(manifest), "--image", str(image_path)]
    assert _invoke(argv, runtime, monkeypatch) == 1
    assert message in _error_line(capsys)


def _roberta_large_manifest(tmp_path: Path, sequence_length: int = 512) -> Path:
    """RoBERTa-large as the ONNX build records it: two INT64 inputs of the catalog's sequence_length and
    outputs of hidden size 1024, the sequence dimension dynamic."""
    record = ArchiveRecord(
        name="roberta-large",
        format="onnx",
        target_model=ROBERTA_LARGE_KEY,
        sha256="0" * 64,
        size_bytes=1,
        source="huggingface:FacebookAI/roberta-large",
        weights="pretrained",
        max_batch_size=8,
        inputs=tuple(
            TensorSpec(name=n, datatype="INT64", dims=(sequence_length,))
            for n in ("input_ids", "attention_mask")
        ),
        outputs=(
            # The ONNX export's dynamic sequence axis: bounded by the fixed length of the inputs.
            TensorSpec(name="last_hidden_state", datatype="FP32", dims=(-1, 1024)),
            TensorSpec(name="pooler_output", datatype="FP32", dims=(1024,)),
        ),
    )
    path = tmp_path / "roberta-manifest.json"
    path.write_text(Manifest(archives=(record,)).to_json(), encoding="utf-8")
    return path


def _token_files(tmp_path: Path, batch: int, sequence_length: int = 512) -> list[str]:
    arguments = []
    for name in ("input_ids", "attention_mask"):
        np.save(tmp_path / f"{name}.npy", np.ones((batch, sequence_length), dtype=np.int64))
        arguments.append(f"{name}={tmp_path / f'{name}.npy'}")
    return arguments


def test_a_reply_over_the_response_limit_is_refused_before_sending_naming_the_batch_that_fits(
    tmp_path: Path, runtime: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """RoBERTa-large at sequence 512: batch 3 answers 6.3 MB, over InvokeEndpoint's 6 MiB."""
    manifest = _roberta_large_manifest(tmp_path)
    argv = ["--model", "roberta-large", "--manifest", str(manifest), "--npy", *_token_files(tmp_path, 3)]

    assert _invoke(argv, runtime, monkeypatch) == 1
    assert _error_line(capsys) == (
        "error: the reply to a batch of 3 would be at least 6,304,384 bytes (6.3 MB), over SageMaker's "
        "6,291,456-byte (6 MiB) InvokeEndpoint response limit; send a batch of at most 2"
    )
    dry_run = tmp_path / "request"
    argv[-2:] = _token_files(tmp_path, 2)
    assert triton_mme_main(["invoke", "--dry-run", str(dry_run), *argv]) == 0
    assert (dry_run / "body.bin").is_file()


def test_a_dry_run_of_an_oversized_reply_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _roberta_large_manifest(tmp_path)
    argv = ["--dry-run", str(tmp_path / "request"), "--model", "roberta-large", "--manifest", str(manifest)]
    assert triton_mme_main(["invoke", *argv, "--npy", *_token_files(tmp_path, 8)]) == 1
    assert "send a batch of at most 2" in _error_line(capsys)
    assert not (tmp_path / "request").exists()


def _big_reply() -> tuple[str, bytes]:
    """A 7 MB binary reply: (content type, body)."""
    return triton_binary_reply(
        {"output": np.zeros((1, 7 * 1024 * 1024 // 4), dtype=np.float32)}, model_name=None
    )


class _BigReply(LoopbackHandler):
    """A local server that answers what SageMaker never would: a 7 MB reply."""

    def do_POST(self) -> None:
        self.read_body()
        self.answer(200, *_big_reply())


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server with the handler the test names; yields its URL and the paths it was sent."""
    seen: list[str] = []
    base = request.param

    class Handler(base):  # type: ignore[misc, valid-type]
        def parse_request(self) -> bool:
            parsed = bool(super().parse_request())
            if parsed:  # recorded before the answer goes out, so the test never races the server
                seen.append(self.path)
            return parsed

    with loopback_server(Handler) as url:
        yield url, seen


@pytest.mark.parametrize("server", [_BigReply], indirect=True)
def test_an_actual_reply_over_the_response_limit_is_one_line(
    server: tuple[str, list[str]], manifest_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = server
    np.save(tmp_path / "x.npy", np.ones((1, 4), dtype=np.float32))
    argv = ["invoke", "--local", url, "--target-model", RESNET_KEY, "--manifest", str(tmp_path / "none.json")]
    assert triton_mme_main([*argv, "--npy", f"x={tmp_path / 'x.npy'}"]) == 1
    size = len(_big_reply()[1])
    assert _error_line(capsys) == (
        f"error: the reply is {size:,} bytes ({size / 1e6:.1f} MB), over SageMaker's 6,291,456-byte (6 MiB) "
        "InvokeEndpoint response limit: the endpoint would refuse it; even one sample does not fit"
    )


class _Unavailable(LoopbackHandler):
    """Answers everything with a retryable error: 503 for the model, 429 ModelNotReady while loading."""

    status = 503

    def _refuse(self) -> None:
        self.read_body()
        body = json.dumps({"__type": "ServiceUnavailable", "message": "try again"}).encode()
        self.answer(self.status, "application/x-amz-json-1.1", body)

    do_GET = do_POST = _refuse


class _ModelNotReady(_Unavailable):
    status = 429


@pytest.mark.parametrize("server", [_Unavailable, _ModelNotReady], indirect=True, ids=["503", "429"])
def test_invoke_endpoint_is_tried_once_whatever_the_aws_configuration_says(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "10")
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    runtime = runtime_client("us-east-1")
    assert runtime.meta.config.retries == {"total_max_attempts": 1, "mode": "standard"}

    request = encode_binary_request({"input": np.ones((1, 4), dtype=np.float32)})
    with pytest.raises(TransportError) as caught:
        invoke_endpoint(runtime, ENDPOINT, RESNET_KEY, request)

    assert str(caught.value).startswith(f"endpoint {ENDPOINT}: ")
    assert "\n" not in str(caught.value)
    assert seen == [f"/endpoints/{ENDPOINT}/invocations"]


@pytest.mark.parametrize("server", [_Unavailable], indirect=True)
def test_the_published_manifest_is_read_once_without_retries(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = server
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "10")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with pytest.raises(ManifestError) as caught:
        ManifestSource("s3://model-store/manifests/manifest.json").manifest()
    assert str(caught.value).startswith("s3://model-store/manifests/manifest.json: cannot read it (")
    assert len(seen) == 1 and seen[0].endswith("manifests/manifest.json")
    assert ONE_ATTEMPT.retries == {"total_max_attempts": 1, "mode": "standard"}


def test_text_without_a_recorded_tokenizer_fails_at_once_with_the_fix(
    manifest_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The client never downloads a tokenizer (no hub, no retries): the build's file or --tokenizer."""
    argv = [
        "invoke",
        "--dry-run",
        str(tmp_path),
        "--model",
        "roberta-large",
        "--manifest",
        str(manifest_path),
    ]
    assert triton_mme_main([*argv, "--text", "hello"]) == 1
    assert _error_line(capsys).endswith("pass --tokenizer DIR with the model's tokenizer.json")
    assert not (tmp_path / "body.bin").exists()


@pytest.mark.parametrize(
    "target", ["../secret.txt", f"{RESNET_KEY}\n", "My Model (final) v2\u202e.tar.gz", "x.tgz"], ids=ascii
)
def test_a_target_model_outside_the_naming_rule_is_refused_before_sending(
    tmp_path: Path,
    runtime: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    np.save(tmp_path / "x.npy", np.ones((1, 4), dtype=np.float32))
    argv = [
        "--target-model",
        target,
        "--manifest",
        str(tmp_path / "none.json"),
        "--npy",
        f"x={tmp_path / 'x.npy'}",
    ]
    assert _invoke(argv, runtime, monkeypatch) == 1
    error = _error_line(capsys)
    assert error.startswith("error: --target-model: ") and "is not an archive name; allowed" in error
    assert "\u202e" not in error
