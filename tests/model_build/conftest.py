"""Shared fixtures: one real build of the tiny models, reused by the read-only tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta

from model_build.build import build_catalog
from model_build.catalog import Catalog
from model_build.manifest import Manifest


@pytest.fixture(scope="session")
def tiny_catalog() -> Catalog:
    return catalog_of(tiny_cnn(), tiny_roberta())


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_catalog: Catalog) -> tuple[Path, Manifest]:
    """One real build of both tiny models in both CPU formats, shared by the read-only tests."""
    out = tmp_path_factory.mktemp("built")
    return out, build_catalog(tiny_catalog, out, progress=False)
