"""The acceptance report: one result per check, each saying what was expected, what was seen and the fix.

Printed one line per check as the run goes, and written whole as JSON (`--report`). Figures carry their
unit in the key (`cold_s`, `warm_ms`).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

ACCEPTANCE_REPORT_SCHEMA_VERSION = 1
# The check groups, in the order the run takes them (docs/acceptance.md has a section per group).
SERVING, TEMPLATE, STRATEGY, MANIFEST, METRICS = "serving", "template", "strategy", "manifest", "metrics"
# Facts no document settles, answered by this deployment (triton_mme/acceptance/verdicts.py).
FIRST_DEPLOY = "first-deploy"
GROUPS = (SERVING, TEMPLATE, STRATEGY, MANIFEST, METRICS, FIRST_DEPLOY)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Check(_Frozen):
    group: str
    name: str
    passed: bool
    expected: str
    seen: str
    # What to do about a failure (None when it passed); for a check that cannot tell, why not and what would.
    fix: str | None = None
    figures: dict[str, float] = {}
    # Neither passed nor failed: what the check reads does not say (e.g. no deployment event was recorded).
    cannot_tell: bool = False

    def line(self) -> str:
        where = f"{self.group}/{self.name}"
        if self.passed:
            return f"PASS {where}: {self.seen}"
        if self.cannot_tell:
            return f"CANNOT TELL {where}: expected {self.expected}; seen {self.seen}; why: {self.fix}"
        return f"FAIL {where}: expected {self.expected}; seen {self.seen}; fix: {self.fix}"


def passed(group: str, name: str, *, expected: str, seen: str, **figures: float) -> Check:
    return Check(group=group, name=name, passed=True, expected=expected, seen=seen, figures=figures)


def failed(group: str, name: str, *, expected: str, seen: str, fix: str, **figures: float) -> Check:
    return Check(group=group, name=name, passed=False, expected=expected, seen=seen, fix=fix, figures=figures)


def cannot_tell(group: str, name: str, *, expected: str, seen: str, why: str) -> Check:
    """A check whose evidence says neither yes nor no: reported, and not counted as a failure."""
    return Check(
        group=group, name=name, passed=False, expected=expected, seen=seen, fix=why, cannot_tell=True
    )


def compared(group: str, name: str, *, expected: object, seen: object, fix: str) -> Check:
    """A check that a live value equals the stack's."""
    if seen == expected:
        return passed(group, name, expected=str(expected), seen=str(seen))
    return failed(group, name, expected=str(expected), seen=str(seen), fix=fix)


class AcceptanceReport(_Frozen):
    schema_version: int = ACCEPTANCE_REPORT_SCHEMA_VERSION
    stack: str
    endpoint: str
    region: str | None = None
    started: str  # ISO 8601, UTC
    checks: tuple[Check, ...] = ()

    @property
    def passed(self) -> bool:
        return bool(self.checks) and not self.failures

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.passed and not check.cannot_tell)

    @property
    def undecided(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.cannot_tell)

    def summary(self) -> str:
        verdict = "accepted" if self.passed else "NOT accepted"
        passed = len(self.checks) - len(self.failures) - len(self.undecided)
        undecided = f", {len(self.undecided)} cannot tell" if self.undecided else ""
        return (
            f"acceptance {self.stack} ({self.endpoint}): {passed} passed, {len(self.failures)} failed"
            f"{undecided}: {verdict}"
        )

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
