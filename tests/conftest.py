"""Shared fixtures (one real build of the tiny models, a moto bucket) and the GPU marker: GPU-only tests
are skipped where no CUDA device exists."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta
from filelock import FileLock
from moto import mock_aws
from store_support import BUCKET

from triton_mme.catalog import Catalog
from triton_mme.core.manifest import Manifest
from triton_mme.local_triton.isolation import isolation_available
from triton_mme.model_build.pipeline import build_catalog

# moto gives every test a fresh boto3 session, and each session would read and parse the same botocore
# service models again (about 0.15 s per client): the run's sessions share one data loader instead.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)

# Every pytest worker (one per core, and two more) has its own jsii runtime (node) for the CDK tests: V8's
# background compiler and collector threads there only compete with the other workers. One V8 thread per
# runtime took a quarter less CPU for the same work (three whole-app synths in a row: 21 CPU-s, with Node's
# default 28). setdefault: a NODE_OPTIONS of the user's own is left as it is.
os.environ.setdefault("NODE_OPTIONS", "--v8-pool-size=1")

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


# Session fixtures that cannot be shared between worker processes: a synthesized CDK app lives in its
# worker's jsii runtime (tests/infra/conftest.py synthesizes each distinct settings once per worker).
ONE_WORKER_FIXTURES = ("synth_with",)


def _worker_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares a costly fixture with other tests, or None."""
    fixtures = getattr(item, "_fixtureinfo", None)
    if fixtures is None:
        return None
    definitions = fixtures.name2fixturedefs
    shared = [name for name in ONE_WORKER_FIXTURES if name in definitions]
    if shared:
        return shared[0]
    if any(chain[-1].scope == "module" for chain in definitions.values()):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest tests first: under `make unit`'s workers (pytest-xdist) none of them starts last and keeps
    # one core busy after the others are done. Otherwise the order stays the collection's.
    items.sort(key=lambda item: "slow" not in item.keywords)
    # Tests that share a module-scoped fixture (a local Triton, a synthesized stack) or one of
    # ONE_WORKER_FIXTURES run in one worker (`--dist loadgroup`): the fixture is set up once, not per worker.
    for item in items:
        if group := _worker_group(item):
            item.add_marker(pytest.mark.xdist_group(group))
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
    """The run's one real build of both tiny models in both CPU formats; tests only read it.

    Under pytest-xdist the first worker to ask builds it in the run's shared temporary directory while the
    others wait on a file lock, then read the same build."""
    workers_root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        workers_root = workers_root.parent  # shared by the run's workers
    out = workers_root / "tiny-build"
    with FileLock(workers_root / "tiny-build.lock"):
        done = out / "manifest.json"
        if done.is_file():
            return out, Manifest.from_json(done.read_bytes())
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


@pytest.fixture(autouse=True)
def report_key_file(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The serving report key of the run's one user, never the real ~/.config one: `serving-check` signs
    with it and `add` verifies with it (core.report_key)."""
    from triton_mme.core.report_key import REPORT_KEY_ENV

    path = tmp_path_factory.getbasetemp() / "config" / "report-key"
    monkeypatch.setenv(REPORT_KEY_ENV, str(path))
    return path
