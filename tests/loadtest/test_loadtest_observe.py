"""What the load test makes of each answer, and the measurement it builds: warm-up, limits, per model."""

from __future__ import annotations

import pytest

from triton_mme.loadtest.observe import Observation, Recorder, kind_of_sagemaker_error, kind_of_status
from triton_mme.planner.outcome import Configuration

LOCAL = Configuration(target="local", model_budget=2)


@pytest.mark.parametrize(
    ("status", "kind"),
    [(200, "ok"), (507, "http_507"), (400, "http_4xx"), (404, "http_4xx"), (502, "http_5xx")],
)
def test_statuses_are_named_by_kind(status: int, kind: str) -> None:
    assert kind_of_status(status) == kind


@pytest.mark.parametrize(
    ("code", "http_status", "model_status", "kind"),
    [
        ("ModelNotReadyException", 429, None, "model_not_ready"),
        ("ModelError", 424, 507, "http_507"),
        ("ModelError", 424, 500, "http_5xx"),
        ("ModelError", 424, None, "http_4xx"),
        ("ThrottlingException", 400, None, "http_4xx"),
        ("ServiceUnavailable", 503, None, "http_5xx"),
        (None, None, None, "other"),
    ],
)
def test_invoke_endpoint_errors_are_named_by_kind(
    code: str | None, http_status: int | None, model_status: int | None, kind: str
) -> None:
    assert kind_of_sagemaker_error(code, http_status, model_status) == kind


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _seen(
    model: int, started: float, kind: str = "ok", hit: bool | None = True, latency: float = 0.01
) -> Observation:
    return Observation(model, started, latency, kind, hit)  # type: ignore[arg-type]


def test_warm_up_requests_and_seconds_are_sent_but_not_measured() -> None:
    clock = Clock()
    recorder = Recorder(("a", "b"), ("a.tar.gz", "b.tar.gz"), warmup_s=5, warmup_requests=2, clock=clock)
    recorder.start()
    for started in (100.0, 101.0, 104.0):  # the third: third request, but inside the first 5 s
        recorder.record(_seen(0, started, hit=False))
    recorder.record(_seen(1, 106.0))
    assert recorder.warmed == 3 and recorder.measured == 1 and recorder.warmup_done_at == 106.0


def test_the_measurement_per_model_and_in_all() -> None:
    clock = Clock()
    recorder = Recorder(("a", "b", "c"), ("a.tar.gz", "b.tar.gz", "c.tar.gz"), clock=clock)
    recorder.start()
    answers = [
        _seen(0, 100.0, hit=False, latency=2.0),
        _seen(0, 102.0, latency=0.01),
        _seen(0, 103.0, latency=0.03),
        _seen(1, 104.0, kind="http_507", hit=None),
        _seen(1, 105.0, kind="timeouts", hit=None),
    ]
    for answer in answers:
        recorder.record(answer)
    clock.now = 110.0
    outcome = recorder.outcome(LOCAL)
    assert outcome.kind == "measured" and outcome.duration_s == 10.0 and outcome.requests == 5
    assert outcome.request_rate_per_s == 0.5
    assert outcome.cache_hit_rate == pytest.approx(2 / 3)
    assert outcome.cold_loads_per_hour == pytest.approx(360.0)
    assert outcome.errors.http_507 == 1 and outcome.errors.timeouts == 1 and outcome.errors.total == 2
    a, b = outcome.models  # "c" was never called
    assert (a.model, a.requests, a.cache_hit_rate, a.cold_loads) == ("a", 3, pytest.approx(2 / 3), 1)
    assert a.latency_ms.p50_ms == pytest.approx(30.0) and a.latency_ms.p99_ms == pytest.approx(1960.6)
    assert (b.requests, b.cache_hit_rate, b.latency_ms.p50_ms) == (2, None, None)


def test_past_the_request_limit_nothing_more_is_measured_and_the_window_ends_with_the_last_answer() -> None:
    clock = Clock()
    recorder = Recorder(("a",), ("a.tar.gz",), limit=2, clock=clock)
    recorder.start()
    for started in (100.0, 101.0, 102.0):
        recorder.record(_seen(0, started, latency=0.5))
    clock.now = 200.0
    outcome = recorder.outcome(LOCAL, ended=150.0)
    assert outcome.requests == 2 and outcome.duration_s == pytest.approx(1.5)


def test_listening_to_locust_requests_takes_the_observation_from_the_context() -> None:
    recorder = Recorder(("a",), ("a.tar.gz",))
    recorder.on_request(
        request_type="invoke", name="a", response_time=10, context={"observation": _seen(0, 1.0)}
    )
    recorder.on_request(request_type="invoke", name="a", response_time=10, context={})
    assert recorder.measured == 1
