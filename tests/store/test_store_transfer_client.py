"""Uploads never run on s3transfer's CRT client, whose requests skip the If-None-Match hook: simulated here
as an instance where boto3 would pick CRT by itself (awscrt installed, instance optimized)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3.s3.transfer
import pytest
from boto3.s3.transfer import TransferConfig, create_transfer_manager
from store_support import BUCKET

from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import LocalObject, classic_transfer_config, publish_objects


class CrtChosen(AssertionError):
    pass


@pytest.fixture
def crt_would_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 sees a recent awscrt on an optimized instance; building a CRT manager fails the test."""
    awscrt = SimpleNamespace(__version__="0.31.0", s3=SimpleNamespace(is_optimized_for_system=lambda: True))
    monkeypatch.setattr(boto3.s3.transfer, "HAS_CRT", True)
    monkeypatch.setattr(boto3.s3.transfer, "awscrt", awscrt, raising=False)
    monkeypatch.setattr(boto3.s3.transfer, "has_minimum_crt_version", lambda version: True)

    def crt_manager(*args: Any, **kwargs: Any) -> Any:
        raise CrtChosen("the CRT transfer client was chosen")

    monkeypatch.setattr(boto3.s3.transfer, "create_crt_transfer_manager", crt_manager, raising=False)


class RecordingS3:
    """The moto client, recording the Config each upload_file is given."""

    def __init__(self, client: Any) -> None:
        self._client, self.configs = client, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def upload_file(self, *args: Any, **kwargs: Any) -> Any:
        self.configs.append(kwargs["Config"])
        return self._client.upload_file(*args, **kwargs)


@pytest.mark.usefixtures("crt_would_be_chosen")
def test_the_simulation_makes_boto3_choose_crt_by_default(s3: Any) -> None:
    with pytest.raises(CrtChosen):
        create_transfer_manager(s3, TransferConfig())


@pytest.mark.usefixtures("crt_would_be_chosen")
@pytest.mark.parametrize("given", [None, TransferConfig(), TransferConfig(preferred_transfer_client="crt")])
def test_every_upload_runs_on_the_classic_client(
    s3: Any, tmp_path: Path, given: TransferConfig | None
) -> None:
    path = tmp_path / "a-onnx-0000000000000000.tar.gz"
    path.write_bytes(b"archive")
    item = LocalObject(path=path, key=path.name, sha256=hashlib.sha256(b"archive").hexdigest(), size=7)
    recording = RecordingS3(s3)

    uploaded, _ = publish_objects(
        ModelStoreClient(recording, BUCKET), "models/", [item], transfer_config=given
    )

    assert uploaded == ["models/a-onnx-0000000000000000.tar.gz"]
    (config,) = recording.configs
    assert config.preferred_transfer_client == "classic"
    assert create_transfer_manager(s3, config) is not None  # classic: no CrtChosen


def test_pinning_keeps_the_callers_other_settings_and_leaves_its_config_alone() -> None:
    given = TransferConfig(multipart_threshold=5 * 1024 * 1024, max_concurrency=1)
    pinned = classic_transfer_config(given)
    assert (pinned.multipart_threshold, pinned.max_concurrency) == (5 * 1024 * 1024, 1)
    assert given.preferred_transfer_client == "auto"
