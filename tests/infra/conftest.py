"""Fixtures for the CDK tests: each distinct settings object is synthesized once per session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from synth_support import Synthesized, synthesize

from triton_mme_cdk.settings import Settings


@pytest.fixture(scope="session")
def synth_with(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Synthesized]:
    """Synthesize once per distinct settings, shared by every test that asks for the same ones."""
    cache: dict[Settings, Synthesized] = {}

    def _synth(**overrides: Any) -> Synthesized:
        settings = Settings(**overrides)
        if settings not in cache:
            cache[settings] = synthesize(settings, tmp_path_factory.mktemp("variant"))
        return cache[settings]

    return _synth


@pytest.fixture(scope="session")
def default_synth(synth_with: Callable[..., Synthesized]) -> Synthesized:
    return synth_with()
