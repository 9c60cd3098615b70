"""The process that forks each model check's child (model_build.sandbox), with the runtimes imported once.

Importing PyTorch takes about 2 CPU-seconds, more than checking a small model does; a build verifies every
archive it writes. So one forker per parent process imports the runtimes and the check's own modules, and
then, for each check, forks a fresh child and waits for it. The forker itself never loads or runs a model:
every child starts from the same state, as if it were a new interpreter that imported those modules. A forked
child has one thread whatever threads the forker's libraries started, so it can enter its namespaces
(core.network_isolation needs a single-threaded process) before it runs anything of the model.

The forker runs with the sandbox's few environment names, in a private directory of its own. Each child
starts its own session (the parent stops the whole group past the time limit), reads nothing (its stdin is
/dev/null), writes its stdout and stderr into its scratch directory, and ends with os._exit.

The protocol on the forker's stdin and stdout: one JSON request per line; the forker answers
`{"pid": <child>}` when the child started and `{"status": <exit status>}` when it ended (negative: the
signal that ended it).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHILD_OUTPUT = ("stdout", "stderr")
_LINE_LIMIT_BYTES = 4096


class ForkerGone(OSError):
    """The forker ended; the message is its last line of stderr."""


class CheckForker:
    """A running forker; `run(request, timeout_s)` is one check's exit status, or TimeoutError once its
    child was stopped."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="model-check-forker-"))
        self.owner = os.getpid()
        with (self.home / "stderr").open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=self.home,
                env={**environment, "HOME": str(self.home), "TMPDIR": str(self.home)},
                start_new_session=True,
            )
        self._buffer = b""
        atexit.register(self.close)

    def run(self, request: dict[str, Any], timeout_s: float) -> int:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise self._gone() from None
        pid = int(self._reply(None)["pid"])
        reply = self._reply(time.monotonic() + timeout_s)
        if reply is None:
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.killpg(pid, signal.SIGKILL)
            self._reply(None)
            raise TimeoutError(pid)
        return int(reply["status"])

    def _reply(self, deadline: float | None) -> Any:
        """The forker's next line, or None at the deadline."""
        assert self.process.stdout is not None
        stdout = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([stdout], [], [], wait)[0]:
                return None
            chunk = os.read(stdout, _LINE_LIMIT_BYTES)
            if not chunk or len(self._buffer) > _LINE_LIMIT_BYTES:
                raise self._gone()
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _gone(self) -> ForkerGone:
        self.process.kill()
        self.process.wait()
        lines = (self.home / "stderr").read_text(errors="replace").strip().splitlines()
        return ForkerGone(f"the model check's process ended ({lines[-1] if lines else 'no output'})")

    def close(self) -> None:
        if (
            self.owner != os.getpid()
        ):  # a forked copy of the parent: the forker and its folder are not its own
            return
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the forker ends when its input does
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.home, ignore_errors=True)


_forker: CheckForker | None = None
_lock = threading.Lock()


def run_forked(request: dict[str, Any], timeout_s: float, environment: dict[str, str]) -> int:
    """One check in a child of this process's forker (started on first use, and again after it ended or in
    a forked copy of this process); its exit status, TimeoutError or ForkerGone."""
    global _forker
    with _lock:
        if _forker is None or _forker.owner != os.getpid() or _forker.process.poll() is not None:
            _forker = CheckForker(environment)
        try:
            return _forker.run(request, timeout_s)
        except ForkerGone:
            _forker = None
            raise


def _child(request: dict[str, Any]) -> None:
    """In the forked child: its own session, scratch directory and output files, then the check."""
    code = 1
    try:
        os.setsid()
        scratch = str(request["scratch"])
        os.chdir(scratch)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, name in enumerate(CHILD_OUTPUT, start=1):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        os.environ.update(HOME=scratch, TMPDIR=scratch)
        tempfile.tempdir = None
        from triton_mme.model_build.sandbox import check_in_child

        sys.stdout.write("\n" + json.dumps(check_in_child(request)) + "\n")
        sys.stdout.flush()
        code = 0
    except BaseException as error:  # its line in the stderr file; os._exit prints no traceback
        os.write(2, f"{type(error).__name__}: {error}\n".encode(errors="replace"))
    finally:
        os._exit(code)


def main() -> int:
    # Imported once, here: every check needs them, and none runs anything of a model at import.
    import numpy  # noqa: F401
    import onnxruntime  # noqa: F401
    import torch  # noqa: F401

    import triton_mme.model_build.sandbox
    import triton_mme.model_build.verify  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
