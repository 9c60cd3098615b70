"""The load test's live line and its warning when the asked rate is not reached."""

from __future__ import annotations

import io

from triton_mme.loadtest.live import LiveLine, rate_warning
from triton_mme.loadtest.observe import Observation, Recorder
from triton_mme.planner.outcome import Configuration, Outcome


def _recorder() -> Recorder:
    recorder = Recorder(
        labels=("a/onnx",), target_models=("a-onnx-0000000000000000.tar.gz",), clock=lambda: 0.0
    )
    recorder.start()
    return recorder


def test_the_live_line_counts_requests_rate_against_the_asked_and_errors() -> None:
    recorder, stream = _recorder(), io.StringIO()
    live = LiveLine(recorder, 3.1, interval_s=5, stream=stream)
    live.tick(1.0)
    for second in range(10):
        kind = "http_507" if second == 4 else "ok"
        recorder.record(Observation(0, float(second), 0.2, kind, cache_hit=True))  # type: ignore[arg-type]
    live.tick(3.0)  # within the interval: nothing new printed
    live.tick(10.0)
    assert stream.getvalue().splitlines() == [
        "  warming up: 0 requests answered, 1 s",
        "  10 requests in 10 s, 1.0 req/s (asked 3.1), 1 error",
    ]


def _measured(rate: float) -> Outcome:
    return Outcome(
        kind="measured",
        configuration=Configuration(target="local", model_budget=2),
        duration_s=60,
        requests=rate * 60,
        request_rate_per_s=rate,
    )


def test_a_rate_short_of_the_asked_one_is_warned_about_and_a_reached_one_is_not() -> None:
    assert rate_warning(_measured(1.8), 3.1) == (
        "warning: reached 1.8 requests/s of the 3.1 asked (58%): the target answered too slowly for the "
        "users; add --users or lower the rate, and read the figures as measured at the reached rate"
    )
    assert rate_warning(_measured(3.0), 3.1) is None
    assert rate_warning(_measured(1.0), None) is None
