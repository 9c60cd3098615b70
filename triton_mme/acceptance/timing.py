"""The run's clock, injected: tests wait through loading windows and metric delays without sleeping."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

# Archives one acceptance run calls at most (`--serving-sample`): each call may be a cold load of up to the
# loading window, so calling every archive of a thousand-model catalog would take hours.
DEFAULT_SERVING_SAMPLE = 24


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Timing:
    """`now` measures durations (seconds), `sleep` waits, `wall` is the UTC time CloudWatch queries use."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    wall: Callable[[], dt.datetime] = _utc_now


SYSTEM_TIMING = Timing()
