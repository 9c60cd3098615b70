"""Shared by the store tests (upload, store commands, add): the moto bucket and the one-line error check."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest, TensorSpec

BUCKET = "model-store"


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


class SentHeaders:
    """Records (operation, headers) of every S3 call a client makes, as botocore is about to send it."""

    def __init__(self, client: Any) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []
        # First, so that it runs before a Stubber answers the call.
        client.meta.events.register_first("before-call.s3", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.calls.append((model.name, dict(params.get("headers", {}))))

    def of(self, operation: str) -> list[dict[str, str]]:
        return [headers for name, headers in self.calls if name == operation]


def _record(name: str, fmt: str, path: Path) -> ArchiveRecord:
    data = path.read_bytes()
    return ArchiveRecord(
        name=name,
        format=fmt,
        target_model=path.name,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        source="torchvision:resnet18",
        weights="random",
        max_batch_size=8,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(1000,)),),
    )


def write_build(directory: Path, archives: dict[str, bytes]) -> Manifest:
    """A build directory with the given archive files and a manifest naming them."""
    directory.mkdir(parents=True, exist_ok=True)
    records = []
    for file_name, data in archives.items():
        (directory / file_name).write_bytes(data)
        name, fmt = file_name.split("-")[0], file_name.split("-")[1]
        records.append(_record(name, fmt, directory / file_name))
    manifest = Manifest(archives=tuple(records))
    (directory / MANIFEST_FILE_NAME).write_text(manifest.to_json(), encoding="utf-8")
    return manifest


ARCHIVES = {
    "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz": b"onnx archive bytes",
    "resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz": b"ts bytes",
}


def passing_report(manifest: Manifest) -> Any:
    """A serving report in which every archive of `manifest` passed."""
    from triton_mme.core.serving_report import ArchiveServing, ServingReport

    archives = tuple(
        ArchiveServing(
            target_model=r.target_model, name=r.name, format=r.format, passed=True, load_seconds=1.0
        )
        for r in manifest.archives
    )
    return ServingReport(manifest_sha256=manifest.sha256, server="test", archives=archives)


def publish_passing_report(s3: Any, manifest: Manifest, prefix: str = "manifests/") -> str:
    """What the serving check publishes before the build's manifest."""
    from triton_mme.core.locations import serving_report_key
    from triton_mme.store.location import ModelStoreClient
    from triton_mme.store.publish import create_json

    key = serving_report_key(manifest.sha256, prefix)
    create_json(
        ModelStoreClient(s3, BUCKET),
        key,
        passing_report(manifest).to_json().encode(),
    )
    return key
