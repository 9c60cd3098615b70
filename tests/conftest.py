"""Shared fixtures (one real build of the tiny models, a moto bucket) and the GPU marker: GPU-only tests
are skipped where no CUDA device exists."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta
from moto import mock_aws
from store_support import BUCKET

from triton_mme.core.catalog import Catalog
from triton_mme.core.manifest import Manifest
from triton_mme.local_triton.isolation import isolation_available
from triton_mme.model_build.pipeline import build_catalog

# Under `make test` (make -j) the tests inherit make's job server; a `make` a test starts is a user's own
# top-level make, not a job of that one (it would warn "jobserver unavailable" on stderr).
for _variable in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
    os.environ.pop(_variable, None)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest tests first: under `make unit`'s workers (pytest-xdist) none of them starts last and keeps
    # one core busy after the other is done. Otherwise the order stays the collection's.
    items.sort(key=lambda item: "slow" not in item.keywords)
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def tiny_catalog() -> Catalog:
    return catalog_of(tiny_cnn(), tiny_roberta())


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory: pytest.TempPathFactory, tiny_catalog: Catalog) -> tuple[Path, Manifest]:
    """The session's one real build of both tiny models in both CPU formats; tests only read it."""
    out = tmp_path_factory.mktemp("built")
    return out, build_catalog(tiny_catalog, out, progress=False)


@pytest.fixture(scope="session")
def built(tiny_build: tuple[Path, Manifest]) -> tuple[Path, Manifest]:
    return tiny_build


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A moto S3 with the model store bucket; the CLI's own clients find the region in the environment."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.fixture(scope="session")
def isolated() -> None:
    """The local Triton starts only in a private network namespace. Where the machine cannot make one
    (unprivileged user namespaces disabled), tests that start it are skipped with the reason, as GPU
    tests are without a GPU; in CI (`CI` set, as GitHub Actions does) they must run, so they fail."""
    reason = isolation_available()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the local Triton cannot be isolated on this CI runner: {reason}")
    pytest.skip(f"the local Triton cannot be isolated here: {reason}")


@pytest.fixture
def fake_archives(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests of the store's S3 protocol whose archives are a few placeholder bytes: the archive
    policy's content checks are skipped there (tests/store/test_store_hostile.py tests them)."""
    from triton_mme.store import publish

    monkeypatch.setattr(publish, "check_archive_contents", lambda path, record: None)
