"""The container environment and what the image's entry point makes of it: namespacing and the ping mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triton_mme.core.triton_container import (
    CONTAINER_ENVIRONMENT,
    NAMESPACING_VARIABLE,
    PING_MODE_OVERRIDE_VARIABLE,
    PING_MODE_VARIABLE,
    SERVER_DEFAULT_PING_MODE,
    namespacing_flag,
    serve_flags,
    server_ping_mode,
)
from triton_mme.core.triton_logging import LOG_ENVIRONMENT

# What a real Triton (2.51, SageMaker mode) answered on /ping after a failed load, in each ping mode.
RECORDED = Path(__file__).parents[1] / "observability/fixtures/expected-namespaced.json"
PINGS: dict[str, int] = json.loads(RECORDED.read_text())["ping_after_failed_load"]


def test_the_container_pings_by_liveness_so_a_failed_load_leaves_it_healthy() -> None:
    mode = server_ping_mode(CONTAINER_ENVIRONMENT)
    assert PINGS[mode] == 200
    # Without the variable in the container's environment the entry point's "live" is not exported.
    without = {k: v for k, v in CONTAINER_ENVIRONMENT.items() if k != PING_MODE_VARIABLE}
    assert server_ping_mode(without) == SERVER_DEFAULT_PING_MODE
    assert PINGS[SERVER_DEFAULT_PING_MODE] == 400  # not 503: HandleServerHealth answers 400 when not ready


@pytest.mark.parametrize(
    ("environment", "multi_model", "mode"),
    [
        ({}, True, "ready"),
        ({PING_MODE_VARIABLE: "ready"}, True, "live"),  # the entry point assigns "live", now exported
        ({PING_MODE_VARIABLE: "live"}, False, "ready"),  # single-model mode assigns "ready"
        ({PING_MODE_VARIABLE: "live", PING_MODE_OVERRIDE_VARIABLE: "ready"}, True, "ready"),
        ({PING_MODE_OVERRIDE_VARIABLE: "live"}, True, "ready"),  # assigned, not exported
    ],
)
def test_the_ping_mode_follows_the_entry_points_assignments(
    environment: dict[str, str], multi_model: bool, mode: str
) -> None:
    assert server_ping_mode(environment, multi_model=multi_model) == mode


@pytest.mark.parametrize(
    ("environment", "flag"),
    [
        ({}, "--model-namespacing=true"),
        ({NAMESPACING_VARIABLE: ""}, "--model-namespacing=true"),
        # The variable's value becomes the flag's: "true" keeps namespacing on, despite its name.
        ({NAMESPACING_VARIABLE: "true"}, "--model-namespacing=true"),
        ({NAMESPACING_VARIABLE: "false"}, "--model-namespacing=false"),
    ],
)
def test_namespacing_is_on_unless_the_variable_sets_the_flag(environment: dict[str, str], flag: str) -> None:
    assert namespacing_flag(environment) == flag


def test_the_container_keeps_the_images_namespacing_and_the_log_levels() -> None:
    assert NAMESPACING_VARIABLE not in CONTAINER_ENVIRONMENT
    assert CONTAINER_ENVIRONMENT.items() >= LOG_ENVIRONMENT.items()
    assert serve_flags()[0] == "--model-namespacing=true"
    assert len(serve_flags()) == 1 + len(LOG_ENVIRONMENT)
