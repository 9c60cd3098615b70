"""Run an unpacked model's checks in a child process that can do little harm.

Verifying a model means running it, and a model is code. The child is forked for this one check from a
process that imported the runtimes and ran no model (model_build.check_forker), so it starts with one
thread and an environment of a few names only. It first enters a private network namespace
(core.network_isolation: no network at all), then a private mount view in which only its scratch directory
is writable and `/run` is empty (model_build.mount_view), sets its own limits before it opens the model —
address space (RLIMIT_AS), CPU seconds (RLIMIT_CPU), the size of any file it writes (RLIMIT_FSIZE), open
files — and runs in that scratch working directory with HOME and TMPDIR pointing there, its output in two
files there. The parent kills its whole process group past the time limit. The model file was
inspected before the child started (archive_inspection) and is inspected again, loaded, before it runs
(model_build.inspection).

What the kernel does not bound here: reading files the user can read (outside `/run`), and connecting
to a Unix socket left elsewhere in the file system. That is what the operator allowlist is for: the
exporters' graphs contain no operator that opens a file or a socket. Where the kernel refuses a mount
namespace the check says so in one line (`no private mount view: ...`) and runs with the other limits.
"""

from __future__ import annotations

import os
import resource
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Nothing heavy at module level: a process that confines itself (confine) must not have started a thread
# (numpy's BLAS threads would make unshare() fail); the forked child has only the one that forked it.

# Generous for the catalog's largest model (RoBERTa-large at batch 32), small next to a machine's swap.
DEFAULT_MEMORY_LIMIT_BYTES = 32 * 1024**3
DEFAULT_TIME_LIMIT_S = 900
# Files the child may write (a scratch file of a runtime); a model writing more is stopped.
FILE_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
OPEN_FILES_LIMIT = 1024
_RESULT_LIMIT_BYTES = 1024 * 1024
MOUNT_VIEW_MADE = "private mount view: only the scratch directory writable"
NO_MOUNT_VIEW = "no private mount view"


@dataclass(frozen=True)
class SandboxLimits:
    memory_bytes: int = DEFAULT_MEMORY_LIMIT_BYTES
    time_s: int = DEFAULT_TIME_LIMIT_S


DEFAULT_LIMITS = SandboxLimits()


def _environment(scratch: Path) -> dict[str, str]:
    kept = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL") if name in os.environ}
    return {
        **kept,
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "OMP_NUM_THREADS": str(min(os.cpu_count() or 1, 8)),
    }


def run_checks(where: str, model_dir: Path, limits: SandboxLimits = DEFAULT_LIMITS) -> list[str]:
    """Inspect and run the unpacked model in `model_dir` in a child forked for it (model_build.check_forker);
    the checks that passed, or ArchiveError with the child's one-line reason."""
    from triton_mme.archive_inspection import ArchiveError
    from triton_mme.core.bounded import load_json
    from triton_mme.model_build.check_forker import ForkerGone, run_forked

    with tempfile.TemporaryDirectory(prefix="model-check-") as scratch:
        request = {"where": where, "model_dir": str(model_dir), "scratch": scratch, **limits.__dict__}
        try:
            status = run_forked(request, limits.time_s, _environment(Path(scratch)))
        except TimeoutError:
            raise ArchiveError(
                f"{where}: the model check did not finish in {limits.time_s} s; stopped (--verify-seconds)"
            ) from None
        except ForkerGone as error:
            raise ArchiveError(f"{where}: the model check failed: {error}") from None
        out, err = (_tail(Path(scratch) / name) for name in ("stdout", "stderr"))
    try:
        # The result is the child's last line: whatever a runtime prints comes before it.
        result = load_json(
            (out.strip().splitlines() or [b""])[-1],
            where="the model check's result",
            max_bytes=_RESULT_LIMIT_BYTES,
        )
        if not isinstance(result, dict) or not ("error" in result or isinstance(result.get("checks"), list)):
            raise ValueError("not a result")
    except ValueError:
        last = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        reason = _signal_reason(status, limits) or last
        raise ArchiveError(f"{where}: the model check failed: {reason}") from None
    if "error" in result:
        raise ArchiveError(str(result["error"]).splitlines()[0])
    return [str(check) for check in result["checks"]]


def _tail(path: Path) -> bytes:
    """The end of one of the child's output files (each at most FILE_SIZE_LIMIT_BYTES): its result line."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, path.stat().st_size - _RESULT_LIMIT_BYTES - 2))
            return file.read()
    except FileNotFoundError:
        return b""


def _signal_reason(status: int | None, limits: SandboxLimits) -> str | None:
    if status in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
        name = signal.Signals(-status).name
        return f"the model process died ({name}; memory limit {limits.memory_bytes:,} bytes)"
    if status == -signal.SIGXCPU:
        return f"the model used more than {limits.time_s} CPU seconds"
    if status == -signal.SIGXFSZ:
        return f"the model wrote a file past {FILE_SIZE_LIMIT_BYTES:,} bytes"
    return None


def _limit(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard),) * 2)


def _mount_view() -> str:
    """Enter the private mount view; the line the check reports either way."""
    from triton_mme.model_build.mount_view import MountViewError, enter_read_only_view

    try:
        enter_read_only_view(Path.cwd())
    except (MountViewError, OSError) as error:
        return f"{NO_MOUNT_VIEW} ({error.strerror or error}): the model may write where the user can"
    return MOUNT_VIEW_MADE


def confine(limits: SandboxLimits) -> str:
    """Confine this (single-threaded) process as the model check's child is: no network, the private mount
    view around the working directory, the limits; the mount view's line, or IsolationError."""
    from triton_mme.core.network_isolation import isolate

    isolate("the model check")
    mount_view = _mount_view()
    _limit(resource.RLIMIT_AS, limits.memory_bytes)
    _limit(resource.RLIMIT_CPU, limits.time_s)
    _limit(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT_BYTES)
    _limit(resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT)
    return mount_view


def check_in_child(request: dict[str, Any]) -> dict[str, Any]:
    """The model check in the forked child (check_forker): confined first, then the checks; the result."""
    from triton_mme.core.network_isolation import IsolationError

    where = str(request["where"])
    try:
        mount_view = confine(SandboxLimits(int(request["memory_bytes"]), int(request["time_s"])))
    except IsolationError as error:
        return {
            "error": f"{where}: the model cannot run without network isolation: {error.strerror or error}"
        }
    from triton_mme.archive_inspection import ArchiveError
    from triton_mme.core.errors import first_line
    from triton_mme.model_build.verify import check_unpacked_model

    try:
        return {"checks": [mount_view, *check_unpacked_model(where, Path(request["model_dir"]))]}
    except ArchiveError as error:
        return {"error": str(error)}
    except MemoryError:
        return {
            "error": f"{where}: the model needs more than {int(request['memory_bytes']):,} bytes of memory"
        }
    except Exception as error:  # a model the runtime rejects: one line
        return {"error": f"{where}: the model does not run: {first_line(error)}"}
