"""Fixtures for the CDK tests: each distinct settings object is synthesized once per session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from synth_support import Synthesized, synthesize

from triton_mme_cdk.constructs.build.model_build_engine_handler import handler
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


def _handler_client(monkeypatch: pytest.MonkeyPatch, service: str) -> Iterator[Stubber]:
    """The build engine handler's `service` client, stubbed with botocore's API shapes; all replies used."""
    client = boto3.client(service, region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setitem(handler._clients, service, client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def codebuild(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    yield from _handler_client(monkeypatch, "codebuild")


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    yield from _handler_client(monkeypatch, "logs")


@pytest.fixture
def stepfunctions(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    yield from _handler_client(monkeypatch, "stepfunctions")
