"""How long a new user waits for a first green run: `make synth`, then `make test`, in a fresh clone.

`python -m benchmarks.fresh_clone [--repo DIR] [--out PREFIX] [--rerun-unit] [--test-target unit]` clones
DIR's HEAD (default: this checkout) into a temporary folder, runs the README's two commands there one after
the other, and writes PREFIX.md and PREFIX.json (default benchmarks/results/fresh-clone, overwritten by each
run: the latest run is the result, earlier ones are in git history), and PREFIX.<target>.log when a command
fails (a passing run removes an earlier run's log). Each command's wall time and CPU time (its whole process
tree, from getrusage), the pytest figures of `make test` (tests passed, pytest's own time) and the load
average before the run are recorded: a busy machine shows as a load above its core count, and such a run is
not a figure to quote. The clone's `.venv` and `node_modules` are new, and uv installs with an empty cache of
its own (a new machine's), so its downloads count. With --rerun-unit, `make unit` then runs once more in the
same clone (pytest alone, with the bytecode the first run wrote): a developer's next run, not counted in the
total. With --test-target unit, the second command is `make unit` instead of `make test`: pytest alone on a
fresh clone's first run, without lint and typecheck beside it (as `make test` ran it before they ran in
parallel).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.context import REPO_ROOT
from benchmarks.machine import cpu_model

DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "fresh-clone"
TEST_TARGETS = ("test", "unit")
# pytest's last line, e.g. "1422 passed, 6 skipped, 3 warnings in 172.31s (0:02:52)".
PYTEST_SUMMARY = re.compile(r"=* *(?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s\b")


@dataclass(frozen=True)
class CommandRun:
    command: str
    returncode: int
    wall_seconds: float
    cpu_seconds: float


@dataclass(frozen=True)
class FreshCloneRun:
    commit: str
    machine: str
    cores: int
    load_before: float
    runs: list[CommandRun]
    pytest_seconds: float | None
    pytest_counts: dict[str, int]
    rerun: CommandRun | None = None
    rerun_pytest_seconds: float | None = None
    pytest_workers: int | None = None  # PYTEST_WORKERS of the environment, when it overrides the Makefile's

    @property
    def total_seconds(self) -> float:
        return round(sum(run.wall_seconds for run in self.runs), 1)

    @property
    def passed(self) -> bool:
        return all(run.returncode == 0 for run in [*self.runs, *([self.rerun] if self.rerun else [])])


def pytest_figures(output: str) -> tuple[float | None, dict[str, int]]:
    """pytest's own time and its counts ({"passed": 1422, "skipped": 6, ...}) from its last summary line."""
    matches = list(PYTEST_SUMMARY.finditer(output))
    if not matches:
        return None, {}
    last = matches[-1]
    counts = {}
    for part in last["counts"].split(", "):
        number, word = part.split(" ", 1)
        counts[word] = int(number)
    return float(last["seconds"]), counts


def run_make(target: str, cwd: Path, log: Path, env: dict[str, str] | None = None) -> tuple[CommandRun, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as sink:
        done = subprocess.run(
            ["make", target], cwd=cwd, stdout=sink, stderr=subprocess.STDOUT, check=False, env=env
        )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return CommandRun(f"make {target}", done.returncode, round(wall, 1), round(cpu, 1)), log.read_text()


def measure(
    repo: Path, scratch: Path, *, rerun_unit: bool = False, test_target: str = "test"
) -> FreshCloneRun:
    clone = scratch / "clone"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    load_before = os.getloadavg()[0]
    env = {**os.environ, "UV_CACHE_DIR": str(scratch / "uv-cache")}
    runs, output = [], ""
    commands = ("synth", test_target)
    for target in commands:
        run, output = run_make(target, clone, scratch / f"make-{target}.log", env)
        runs.append(run)
        if run.returncode != 0:
            break
    seconds, counts = pytest_figures(output) if runs[-1].command == f"make {test_target}" else (None, {})
    rerun, rerun_seconds = None, None
    if rerun_unit and len(runs) == len(commands) and all(run.returncode == 0 for run in runs):
        rerun, rerun_output = run_make("unit", clone, scratch / "make-unit.log", env)
        rerun_seconds = pytest_figures(rerun_output)[0]
    return FreshCloneRun(
        commit=commit,
        machine=cpu_model(),
        cores=os.cpu_count() or 1,
        load_before=round(load_before, 2),
        runs=runs,
        pytest_seconds=seconds,
        pytest_counts=counts,
        rerun=rerun,
        rerun_pytest_seconds=rerun_seconds,
        pytest_workers=int(env["PYTEST_WORKERS"]) if env.get("PYTEST_WORKERS") else None,
    )


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def report(result: FreshCloneRun) -> str:
    busy = " (busy: not a figure to quote)" if result.load_before > result.cores else ""
    second = result.runs[1].command if len(result.runs) > 1 else "make test"
    lines = [
        f"# A fresh clone's `make synth` + `{second}`",
        "",
        f"Commit {result.commit}, {result.machine}, {result.cores} cores; load average before the run "
        f"{result.load_before}{busy}.",
    ]
    if result.pytest_workers is not None:
        lines.append(
            f"Run with `PYTEST_WORKERS={result.pytest_workers}` in the environment "
            "(the Makefile's default is one worker per core and one more)."
        )
    lines += [
        "Reproduce: `python -m benchmarks.fresh_clone` (benchmarks/fresh_clone.py).",
        "",
        "| Command | Exit status | Wall | CPU (whole tree) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{run.command}` | {run.returncode} | {_minutes(run.wall_seconds)} | {_minutes(run.cpu_seconds)} |"
        for run in result.runs
    ]
    lines += [f"| total | {'ok' if result.passed else 'failed'} | {_minutes(result.total_seconds)} | |", ""]
    if result.pytest_seconds is not None:
        counts = ", ".join(f"{number} {word}" for word, number in result.pytest_counts.items())
        lines.append(f"pytest inside `{second}`: {_minutes(result.pytest_seconds)} ({counts}).")
    if result.rerun is not None:
        pytest_time = (
            _minutes(result.rerun_pytest_seconds) if result.rerun_pytest_seconds is not None else "-"
        )
        lines += [
            "",
            "`make unit` again in the same clone (pytest alone, bytecode written by the first run; not in "
            f"the total): exit status {result.rerun.returncode}, wall {_minutes(result.rerun.wall_seconds)}, "
            f"CPU {_minutes(result.rerun.cpu_seconds)}, pytest {pytest_time}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    summary = (__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fresh_clone", description=summary)
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="a git checkout (default: this one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results prefix (.md and .json)")
    parser.add_argument(
        "--rerun-unit", action="store_true", help="then run `make unit` once more in the clone (default: no)"
    )
    parser.add_argument(
        "--test-target",
        choices=TEST_TARGETS,
        default="test",
        help="the second command: make test (the README's; default) or make unit (pytest alone)",
    )
    args = parser.parse_args(argv)
    if shutil.which("make") is None or shutil.which("git") is None:
        print("error: the benchmark needs make and git on PATH", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fresh-clone-") as scratch:
        result = measure(
            args.repo.resolve(), Path(scratch), rerun_unit=args.rerun_unit, test_target=args.test_target
        )
        if not result.passed:  # the failed command's whole output, for reading after the clone is gone
            failed = next(
                run for run in [*result.runs, result.rerun] if run and run.returncode
            ).command.split()[-1]
            shutil.copy(Path(scratch) / f"make-{failed}.log", args.out.with_suffix(f".{failed}.log"))
    if result.passed:  # an earlier failure's log is not this run's
        for target in {*TEST_TARGETS, "synth"}:
            args.out.with_suffix(f".{target}.log").unlink(missing_ok=True)
    text = report(result)
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    payload = asdict(result) | {"total_seconds": result.total_seconds, "passed": result.passed}
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(text, end="")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
