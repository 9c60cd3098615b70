"""The rules of SageMaker's deployment guardrails, as pure functions of plain values (the settings use them).

An endpoint update is a blue/green deployment (traffic shifted `canary`, `linear` or `all-at-once`) or a
`rolling` one, with a baking period after every step during which the rollback alarms are watched. The
ranges and exclusions come from `triton_mme/core/platform.py`; docs/updates.md explains them.

Two facts are not documented, so the safe side is taken:
- how SageMaker turns a percentage into whole instances: a step given in percent must be at least one
  instance of the smallest fleet (so no rounding can leave a step empty), and no step may exceed its
  documented share of the smallest fleet;
- the fleet a percentage refers to, "the variant's total instance count", is the instance count when the
  update starts, which autoscaling moves between its minimum and maximum (the endpoint retains it), so a size
  must fit every count in that range.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from triton_mme.core.numbers import whole_number
from triton_mme.core.platform import PLATFORM

SECONDS_PER_MINUTE = 60


class Strategy(StrEnum):
    CANARY = "canary"
    LINEAR = "linear"
    ALL_AT_ONCE = "all-at-once"
    ROLLING = "rolling"

    @property
    def is_blue_green(self) -> bool:
        return self is not Strategy.ROLLING

    @property
    def steps_traffic(self) -> bool:
        """Whether it moves part of the fleet at a time (every strategy but all at once)."""
        return self is not Strategy.ALL_AT_ONCE


STRATEGIES = tuple(strategy.value for strategy in Strategy)
_SIZE = re.compile(r"^(?P<value>[0-9]+)(?P<percent>%?)$")


@dataclass(frozen=True)
class CapacitySize:
    """A step of an update: a number of instances, or a percentage of the variant's instances."""

    value: int
    percent: bool

    @classmethod
    def parse(cls, text: str) -> CapacitySize:
        """'2' is two instances, '25%' a quarter of the fleet; ValueError otherwise."""
        match = _SIZE.fullmatch(text.strip())
        value = None if match is None else whole_number(match["value"])
        if match is None or value is None or value < 1:
            raise ValueError(text)
        return cls(value, bool(match["percent"]))

    @property
    def api_type(self) -> str:
        """CapacitySize.Type in the SageMaker API."""
        return "CAPACITY_PERCENT" if self.percent else "INSTANCE_COUNT"

    def instances(self, fleet: int) -> int:
        """The most instances this step can mean on a fleet of `fleet` (a percentage rounded up)."""
        return math.ceil(self.value * fleet / 100) if self.percent else self.value

    def steps(self, fleet: int) -> int:
        """How many such steps move a whole fleet of `fleet` instances (at most)."""
        if self.percent:
            return math.ceil(100 / self.value)
        return math.ceil(fleet / self.value)

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


@dataclass(frozen=True)
class Fleet:
    """The instance counts the variant can have when an update starts."""

    smallest: int
    largest: int


# The share of the fleet one step may move, in percent (platform.py, from the SageMaker API reference).
STEP_SHARES = {
    Strategy.CANARY: PLATFORM.limits.guardrails.canary_percent_range,
    Strategy.LINEAR: PLATFORM.limits.guardrails.linear_step_percent_range,
    Strategy.ROLLING: PLATFORM.limits.guardrails.rolling_batch_percent_range,
}


def allowed_sizes(strategy: Strategy, fleet: Fleet) -> str:
    """The step sizes that fit every fleet count, in the settings' words ('none' when nothing fits)."""
    low, high = STEP_SHARES[strategy]
    percents = (max(low, math.ceil(100 / fleet.smallest)), high)
    counts = (max(1, math.ceil(low * fleet.largest / 100)), math.floor(high * fleet.smallest / 100))
    choices = [f"{a}%..{b}%" if a < b else f"{a}%" for a, b in (percents,) if a <= b]
    choices += [
        f"{a}..{b} instances" if a < b else f"{a} instance{'s' if a > 1 else ''}"
        for a, b in (counts,)
        if a <= b
    ]
    return " or ".join(choices) or "none"


def step_problem(strategy: Strategy, size: CapacitySize, fleet: Fleet) -> str | None:
    """Why a canary, linear step or rolling batch of `size` does not fit the fleet, or None."""
    low, high = STEP_SHARES[strategy]
    if size.percent:
        fits = low <= size.value <= high and size.value * fleet.smallest >= 100
    else:
        fits = low * fleet.largest <= 100 * size.value <= high * fleet.smallest
    if fits:
        return None
    return (
        f"does not fit a variant of {_counts(fleet)}: a step must be {low}-{high}% of the instances and at "
        f"least one instance; allowed: {allowed_sizes(strategy, fleet)}"
    )


def fleet_problem(strategy: Strategy, fleet: Fleet) -> str | None:
    """Steps of at most half the fleet need at least two instances at all times."""
    if strategy.steps_traffic and fleet.smallest < 2:
        return (
            f"moves part of the fleet at a time, at most half of it and at least one instance, which a "
            f"variant of {_counts(fleet)} cannot do"
        )
    return None


def instance_type_problem(strategy: Strategy, instance_type: str) -> str | None:
    """Instance families on which SageMaker ignores the guardrails (deployment-guardrails-exclusions)."""
    if strategy is not Strategy.ALL_AT_ONCE and instance_type.startswith(
        PLATFORM.limits.guardrail_fallback_instance_prefixes.value
    ):
        return f"{instance_type} endpoints fall back to blue/green all at once with no baking period"
    return None


def variant_count_problem(strategy: Strategy, variants: int) -> str | None:
    """Rolling deployments exclude multi-variant endpoints (deployment-guardrails-exclusions)."""
    if strategy is Strategy.ROLLING and variants != 1:
        return f"rolling updates exclude endpoints with several variants (this one has {variants})"
    return None


def baking_periods(strategy: Strategy, size: CapacitySize | None, fleet: Fleet) -> int:
    """How many baking periods (WaitIntervalInSeconds) an update waits through, at most."""
    if strategy is Strategy.CANARY:
        return 2  # after the canary, and the final one after all traffic moved
    if strategy is Strategy.ALL_AT_ONCE:
        return 1
    assert size is not None
    return size.steps(fleet.largest)


def total_wait_seconds(
    strategy: Strategy, size: CapacitySize | None, fleet: Fleet, wait_seconds: int, termination_wait: int
) -> int:
    """The waiting an update is made of; its maximum execution time must be larger (API reference)."""
    waiting = baking_periods(strategy, size, fleet) * wait_seconds
    return waiting + (termination_wait if strategy.is_blue_green else 0)


def peak_instances(
    strategy: Strategy, size: CapacitySize | None, rollback: CapacitySize | None, fleet: Fleet
) -> int:
    """The most instances of the variant's type running during an update or its rollback.

    Blue/green provisions a whole second fleet; rolling adds one batch, and its rollback brings the old fleet
    back `rollback` at a time (all at once when unset).
    """
    largest = fleet.largest
    if strategy.is_blue_green:
        return 2 * largest
    assert size is not None
    back = largest if rollback is None else min(largest, rollback.instances(largest))
    return largest + max(min(largest, size.instances(largest)), back)


def _counts(fleet: Fleet) -> str:
    if fleet.smallest == fleet.largest:
        return f"{fleet.smallest} instance{'s' if fleet.smallest > 1 else ''}"
    return f"{fleet.smallest}..{fleet.largest} instances"
