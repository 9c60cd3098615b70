"""What every benchmark gets: the mode (quick or full), a scratch folder, and shared model artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class RunContext:
    quick: bool
    scratch: Path
    # Artifacts built once per run and shared by the benchmarks that need them (see artifacts.py).
    cache: dict[str, Any] = field(default_factory=dict)

    def pick(self, full: T, quick: T) -> T:
        """A count or input for this mode; quick runs exist for iteration, not for publishing."""
        return quick if self.quick else full
