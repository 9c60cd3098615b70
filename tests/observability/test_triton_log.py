"""The parser of Triton's model lines, on lines a real Triton wrote (fixtures/, from capture_triton_lines.py:
started without model namespacing, and with it, as the image's entry point starts it) and on broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triton_mme.core.triton_container import CONTAINER_ENVIRONMENT, serve_flags
from triton_mme.local_triton.server import TritonServer
from triton_mme.observability.figures import render_table, summarize
from triton_mme.observability.triton_log import Kind, LogEvent, Malformed, parse_line, read_events

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURED = (FIXTURES / "triton-2.51-sagemaker.log").read_text().splitlines()
EXPECTED: dict[str, dict[str, int]] = json.loads((FIXTURES / "expected.json").read_text())
# The same server started with model namespacing on, as the image's entry point starts it.
NAMESPACED = (FIXTURES / "triton-2.51-sagemaker-namespaced.log").read_text().splitlines()
NAMESPACED_EXPECTED: dict[str, dict[str, int]] = json.loads(
    (FIXTURES / "expected-namespaced.json").read_text()
)["models"]
BOTH = pytest.mark.parametrize(
    ("captured", "expected"),
    [(CAPTURED, EXPECTED), (NAMESPACED, NAMESPACED_EXPECTED)],
    ids=["bare", "namespaced"],
)
# Lines the real server writes that name a model but are not one of its events (the platform's own steps, the
# backend's detail); any other line naming a model must be read as an event.
NOT_EVENTS = (
    "Model repository registered",
    "Model repository unregistered",
    "TRITONBACKEND_ModelInstanceInitialize",
    "Unloading SageMaker TargetModel",
    "UNLOAD for model",
    "Failed to initialize Python stub",
    "ERROR: Failed to create instance",
)


@BOTH
def test_the_figures_of_the_captured_log_are_what_was_done(
    captured: list[str], expected: dict[str, dict[str, int]]
) -> None:
    summary = summarize(read_events(captured))
    assert summary.malformed == []
    assert set(summary.models) == set(expected)
    for name, done in expected.items():
        figures = summary.models[name]
        assert (figures.requests or 0) == done.get("requests", 0), name
        assert figures.cold_loads == done.get("cold_loads", 0), name
        assert figures.evictions == done.get("evictions", 0), name
        assert figures.failed_loads == done.get("failed_loads", 0), name
        assert figures.failed_out_of_memory == done.get("failed_out_of_memory", 0), name


@BOTH
def test_no_line_of_the_real_server_that_names_a_model_is_missed(
    captured: list[str], expected: dict[str, dict[str, int]]
) -> None:
    missed = [
        line
        for line in captured
        if any(name in line for name in expected)
        and not isinstance(parse_line(line), LogEvent)
        and not any(known in line for known in NOT_EVENTS)
    ]
    assert missed == []


@BOTH
def test_every_kind_of_event_is_in_the_captured_log(captured: list[str], expected: object) -> None:
    kinds = {event.kind for event in read_events(captured) if isinstance(event, LogEvent)}
    assert kinds == {Kind.INVOKED, Kind.LOAD_STARTED, Kind.LOADED, Kind.UNLOADED, Kind.LOAD_FAILED}


def test_the_namespaced_log_names_models_by_repository_and_the_parser_reads_the_target_model() -> None:
    namespaced = [line for line in NAMESPACED if "model::" in line]
    assert any("loading: /opt/ml/models/" in line for line in namespaced)  # the form the endpoint writes
    assert any("successfully loaded '/opt/ml/models/" in line for line in namespaced)
    assert any("Invoking SageMaker TargetModel: echo-" in line for line in NAMESPACED)  # bare
    models = {event.model for event in read_events(NAMESPACED) if isinstance(event, LogEvent)}
    assert models == set(NAMESPACED_EXPECTED)


def test_requests_and_loads_of_one_model_are_one_row_of_the_table() -> None:
    summary = summarize(read_events(NAMESPACED))
    table = render_table(summary.models.values())
    echo = next(name for name in NAMESPACED_EXPECTED if name.startswith("echo-"))
    rows = [row for row in table[1:] if echo in row]
    assert len(rows) == 1 and len(table) == 1 + len(NAMESPACED_EXPECTED)
    figures = summary.models[echo]
    assert (figures.requests, figures.cold_loads) == (
        NAMESPACED_EXPECTED[echo]["requests"],
        NAMESPACED_EXPECTED[echo]["cold_loads"],
    )
    assert len(figures.load_seconds) == NAMESPACED_EXPECTED[echo]["cold_loads"]  # loading/loaded paired


def test_failed_loads_carry_the_reason_and_tell_out_of_memory_apart() -> None:
    failed = [e for e in read_events(CAPTURED) if isinstance(e, LogEvent) and e.kind is Kind.LOAD_FAILED]
    by_model = {e.model: e for e in failed}
    oom = next(e for name, e in by_model.items() if name.startswith("oom-"))
    refused = next(e for name, e in by_model.items() if name.startswith("mismatched-"))
    assert "CUDA out of memory" in oom.reason and oom.out_of_memory
    assert "not_in_the_graph" in refused.reason and not refused.out_of_memory
    assert "\n" not in refused.reason


def test_load_times_come_from_the_loading_and_loaded_lines() -> None:
    summary = summarize(read_events(CAPTURED))
    seconds = [s for figures in summary.models.values() for s in figures.load_seconds]
    assert len(seconds) == sum(done.get("cold_loads", 0) for done in EXPECTED.values())
    assert all(0 < s < 120 for s in seconds)


def test_the_unloads_of_a_stopping_server_are_no_evictions() -> None:
    unloaded = "I1201 12:51:00.000000 7 model_lifecycle.cc:624] \"successfully unloaded 'm' version 1\""
    lines = [
        unloaded,
        'I1201 12:51:01.000000 7 server.cc:336] "All models are stopped, unloading models"',
        unloaded.replace("12:51:00", "12:51:02"),
    ]
    kinds = [e.kind for e in read_events(lines) if isinstance(e, LogEvent)]
    assert kinds == [Kind.UNLOADED, Kind.SHUTDOWN_UNLOADED]
    assert summarize(read_events(lines)).models["m"].evictions == 1


def test_a_load_across_midnight_takes_seconds_not_a_negative_day() -> None:
    lines = [
        'I1231 23:59:59.500000 7 model_lifecycle.cc:472] "loading: m.tar.gz:1"',
        "I0101 00:00:01.000000 7 model_lifecycle.cc:839] \"successfully loaded 'm.tar.gz'\"",
    ]
    assert summarize(read_events(lines)).models["m.tar.gz"].load_seconds == [pytest.approx(1.5)]


@pytest.mark.parametrize(
    ("line", "kind", "model"),
    [
        # Releases before Triton quoted its messages, and with the version on the loaded line.
        (
            "I0515 10:00:00.000001 1 model_lifecycle.cc:693] successfully loaded 'a.tar.gz' version 1",
            Kind.LOADED,
            "a.tar.gz",
        ),
        (
            "I0515 10:00:00.000001 1 model_lifecycle.cc:459] loading: a.tar.gz:3",
            Kind.LOAD_STARTED,
            "a.tar.gz",
        ),
        (
            'I0515 10:00:00.000001 1 sagemaker_server.cc:241] "Invoking SageMaker TargetModel: b.tar.gz"',
            Kind.INVOKED,
            "b.tar.gz",
        ),
        (
            "I0515 10:00:00.000001 1 model_lifecycle.cc:624] \"successfully unloaded 'c' version 1\"\r\n",
            Kind.UNLOADED,
            "c",
        ),
        # Namespaced: a TargetModel is an S3 key and may hold "::" itself; the namespace, a path, does not.
        (
            'I0515 10:00:00.000001 1 model_lifecycle.cc:472] "loading: /opt/ml/models/0f/model::a::b:1"',
            Kind.LOAD_STARTED,
            "a::b",
        ),
        (
            "I0515 10:00:00.000001 1 model_lifecycle.cc:777] \"failed to load '/opt/ml/models/0f/model::d'\"",
            Kind.LOAD_FAILED,
            "d",
        ),
        # A bare name with "::" is not a namespace.
        (
            'I0515 10:00:00.000001 1 sagemaker_server.cc:241] "Invoking SageMaker TargetModel: a::b.tar.gz"',
            Kind.INVOKED,
            "a::b.tar.gz",
        ),
    ],
)
def test_other_forms_of_the_same_lines(line: str, kind: Kind, model: str) -> None:
    event = parse_line(line)
    assert isinstance(event, LogEvent)
    assert (event.kind, event.model) == (kind, model)


@pytest.mark.parametrize(
    "line",
    [
        "I1201 12:46:23 6220 model_lifecycle.cc:839] \"successfully loaded 'x'\"",  # no microseconds
        "I1201 12:46:23.157547 model_lifecycle.cc:839] \"successfully loaded 'x'\"",  # no thread id
        "I1201 12:46:23.157547 6220 model_lifecycle.cc:839 \"successfully loaded 'x'\"",  # no bracket
        "E1201 1",  # cut short
        "I1201 12:46:23.157547 6220 ",
    ],
)
def test_broken_triton_lines_are_malformed_not_events(line: str) -> None:
    assert isinstance(parse_line(line), Malformed)
    assert summarize(read_events([line])).malformed == [line]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "Triton is running in SageMaker MME mode.",
        "+------------------+------+",
        "  warnings.warn(",
        'I1201 12:46:21.006110 6220 sagemaker_server.cc:360] "Loading SageMaker TargetModel: "',
        "I1201 12:46:23.157547 6220 model_lifecycle.cc:839] \"successfully loaded ''\"",  # no name
        'I1201 12:46:23.157547 6220 model_lifecycle.cc:839] "loading: no-version"',
    ],
)
def test_other_lines_are_no_event(line: str) -> None:
    assert parse_line(line) is None


def test_the_local_triton_logs_with_the_flags_the_endpoint_gets(tmp_path: Path) -> None:
    command = TritonServer(workdir=tmp_path).command(tmp_path / "bin-dir")
    flags = serve_flags(CONTAINER_ENVIRONMENT)
    assert flags == [
        "--model-namespacing=true",
        "--log-verbose=0",
        "--log-info=true",
        "--log-warning=true",
        "--log-error=true",
    ]
    assert [arg for arg in command if arg.startswith(("--log-", "--model-namespacing"))] == flags
