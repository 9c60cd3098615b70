"""What the load test says while it runs: a line every few seconds (requests, the rate reached against the
rate asked, errors), and afterwards a warning when the asked rate was not reached."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from triton_mme.core.wording import plural
from triton_mme.loadtest.observe import Recorder
from triton_mme.planner.outcome import Outcome

LIVE_INTERVAL_S = 5.0
# Below this share of the asked rate the run is reported as not having reached it.
REACHED_SHARE = 0.95


@dataclass
class LiveLine:
    """Prints the recorder's state at most every `interval_s` seconds (of the clock given to `tick`)."""

    recorder: Recorder
    asked_rate_per_s: float | None
    interval_s: float = LIVE_INTERVAL_S
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    _last: float | None = None

    def line(self, now: float) -> str:
        recorder = self.recorder
        errors = sum(1 for o in recorder.observations if o.kind != "ok")
        if recorder.warmup_done_at is None:
            return (
                f"  warming up: {plural(recorder.warmed, 'request')} answered, {now - recorder.started:.0f} s"
            )
        elapsed = max(now - recorder.warmup_done_at, 1e-9)
        rate = f"{recorder.measured / elapsed:.1f} req/s"
        if self.asked_rate_per_s:
            rate += f" (asked {self.asked_rate_per_s:g})"
        return (
            f"  {plural(recorder.measured, 'request')} in {elapsed:.0f} s, {rate}, {plural(errors, 'error')}"
        )

    def tick(self, now: float) -> None:
        if self._last is not None and now - self._last < self.interval_s:
            return
        self._last = now
        print(self.line(now), file=self.stream, flush=True)


def rate_warning(measured: Outcome, asked_rate_per_s: float | None) -> str | None:
    """One line when the run reached less than the rate it was asked for."""
    if not asked_rate_per_s or measured.request_rate_per_s >= REACHED_SHARE * asked_rate_per_s:
        return None
    share = measured.request_rate_per_s / asked_rate_per_s
    return (
        f"warning: reached {measured.request_rate_per_s:.1f} requests/s of the {asked_rate_per_s:g} asked "
        f"({share:.0%}): the target answered too slowly for the users; add --users or lower the rate, and "
        "read the figures as measured at the reached rate"
    )
