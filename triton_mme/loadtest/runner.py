"""Run the load test with Locust as a library: headless, a bounded number of users for a bounded time.

Each Locust user sends the traffic file's requests: a seeded stream of archives drawn by popularity, paced so
that all users together send `rate_per_s` (Locust's constant_throughput), or back to back when no rate is
given. Every request is reported as a Locust `request` event (so Locust's own statistics see it) carrying
the observation, which the recorder collects.

Importing this module imports Locust, which patches the standard library for gevent: only the `loadtest`
command's process does so.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gevent
from locust import User, constant, constant_throughput, task
from locust.env import Environment
from locust.exception import StopUser

from triton_mme.loadtest.observe import Recorder
from triton_mme.loadtest.requests import RequestPlan

POLL_S = 0.05


@dataclass(frozen=True)
class Bounds:
    users: int
    duration_s: float  # measured time, after the warm-up
    rate_per_s: float | None = None  # all users together; None: back to back
    hard_limit_s: float = 3600.0  # the whole run, warm-up included, ends by then whatever happens
    # At the end, requests under way may finish (and are measured) for this long before users are stopped.
    stop_timeout_s: float = 70.0


class TrafficUser(User):
    """One simulated client: sends the plan's requests to its own session of the target."""

    abstract = True
    plan: RequestPlan
    make_session: Callable[[], Any]
    numbering: itertools.count[int]
    done: Callable[[], bool]  # true once enough requests are measured: send no more

    def on_start(self) -> None:
        self.session = self.make_session()
        self.choices = self.plan.choices(next(self.numbering))

    def on_stop(self) -> None:
        self.session.close()

    @task
    def invoke(self) -> None:
        if self.done():
            raise StopUser()
        index = next(self.choices)
        observation = self.session.send(index)
        self.environment.events.request.fire(
            request_type="invoke",
            name=self.plan.labels[index],
            response_time=observation.latency_s * 1000,
            response_length=0,
            exception=None if observation.kind == "ok" else RuntimeError(observation.kind),
            context={"observation": observation},
        )


def run(
    plan: RequestPlan,
    make_session: Callable[[], Any],
    recorder: Recorder,
    bounds: Bounds,
    tick: Callable[[float], None] | None = None,
) -> float:
    """Drive the target until the measured time or request count is reached; returns when it ended
    (time.monotonic()). `tick` is called with the time at every poll (the live progress line)."""
    pacing = (
        constant(0) if bounds.rate_per_s is None else constant_throughput(bounds.rate_per_s / bounds.users)
    )
    user_class = type(
        "TrafficUser",
        (TrafficUser,),
        {"abstract": False, "plan": plan, "make_session": staticmethod(make_session),
         "numbering": itertools.count(), "wait_time": pacing, "done": staticmethod(lambda: recorder.full)},
    )  # fmt: skip
    environment = Environment(user_classes=[user_class], stop_timeout=bounds.stop_timeout_s)
    environment.events.request.add_listener(recorder.on_request)
    runner = environment.create_local_runner()
    recorder.start()
    runner.start(bounds.users, spawn_rate=bounds.users)

    def stop_when_done() -> None:
        while True:
            gevent.sleep(POLL_S)
            now, began = time.monotonic(), recorder.warmup_done_at
            if tick is not None:
                tick(now)
            timed_out = began is not None and now - began >= bounds.duration_s
            counted = recorder.full
            if timed_out or counted or now - recorder.started >= bounds.hard_limit_s:
                runner.quit()
                return

    stopper = gevent.spawn(stop_when_done)
    runner.greenlet.join()
    ended = time.monotonic()
    stopper.kill()
    return ended
