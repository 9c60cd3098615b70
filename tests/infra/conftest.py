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


@pytest.fixture
def handler_client(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """Makes the build engine handler's client of a service, with test credentials; `handler.client` answers
    with the ones made in this test."""
    clients: dict[str, Any] = {}
    monkeypatch.setattr(handler, "client", clients.__getitem__)

    def make(service: str, region: str = "eu-west-1") -> Any:
        clients[service] = boto3.client(
            service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x"
        )
        return clients[service]

    return make


def _stubbed(make: Callable[[str], Any], service: str) -> Iterator[Stubber]:
    """The handler's `service` client, stubbed with botocore's API shapes; all replies used."""
    with Stubber(make(service)) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def codebuild(handler_client: Callable[[str], Any]) -> Iterator[Stubber]:
    yield from _stubbed(handler_client, "codebuild")


@pytest.fixture
def logs(handler_client: Callable[[str], Any]) -> Iterator[Stubber]:
    yield from _stubbed(handler_client, "logs")


@pytest.fixture
def stepfunctions(handler_client: Callable[[str], Any]) -> Iterator[Stubber]:
    yield from _stubbed(handler_client, "stepfunctions")
