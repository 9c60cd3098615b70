"""Start and stop the tritonserver bundled in the nvidia-pytriton wheel, in SageMaker multi-model mode.

The launch follows pytriton's own (pytriton/triton.py, pytriton/server/triton_server.py): the binaries are
copied into a scratch directory with the python-backend stub built for the running Python, the wheel's
bundled libraries go on LD_LIBRARY_PATH and the virtualenv's bin on PATH so the stub imports its packages.

The server runs in a private network namespace (see `isolation`): its SageMaker listener, which binds
every interface and loads whatever directory it is sent, is reachable only through `connection()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import http.client
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from triton_mme.client.triton_routes import LOOPBACK
from triton_mme.core.errors import UserError
from triton_mme.core.platform import PLATFORM
from triton_mme.core.triton_container import (
    CONTAINER_ENVIRONMENT,
    PING_MODE_VARIABLE,
    serve_flags,
    server_ping_mode,
)
from triton_mme.local_triton.isolation import ISOLATION_FAILED, Broker

STUB_NAME = "triton_python_backend_stub"


class TritonStartError(UserError, RuntimeError):
    """tritonserver could not be prepared or did not become ready; the message is one line."""


def pytriton_dist() -> tuple[Path, Path]:
    """The wheel's tritonserver tree and its bundled shared libraries, found without importing pytriton."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise TritonStartError("nvidia-pytriton is not installed; run `make install` (requirements-dev.txt)")
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "tritonserver", package.parent / "nvidia_pytriton.libs"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state ppid pgrp ...
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            members.append(int(entry.name))
    return members


def _die_with_parent() -> None:
    # If this Python process is killed outright, the launcher still gets SIGTERM and passes it on to
    # tritonserver, which takes its stubs down.
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class _BrokeredConnection(http.client.HTTPConnection):
    """An HTTP connection whose socket comes from the launcher inside the server's namespace."""

    def __init__(self, broker: Broker, timeout: float):
        # The SageMaker container's own port: inside the private namespace nothing else can hold it.
        super().__init__(LOOPBACK, PLATFORM.limits.sagemaker_container.port, timeout=timeout)
        self._broker = broker

    def connect(self) -> None:
        self.sock = self._broker.connection(self.timeout)


class TritonServer:
    """One tritonserver process (and its python-backend stubs) in its own process group and its own
    network namespace, with the launcher that hands out connections to it as the group's leader."""

    def __init__(self, *, workdir: Path, exit_timeout_s: int = 10, log_path: Path | None = None):
        self.workdir = workdir
        self.exit_timeout_s = exit_timeout_s
        # Triton's log, in the endpoint's format (the same log flags); `triton-mme models --local` reads it.
        self.log_path = log_path or workdir / "tritonserver.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._broker: Broker | None = None

    @property
    def pid(self) -> int | None:
        """The launcher's pid (the process group's id; tritonserver is its child)."""
        return self._process.pid if self._process else None

    def connection(self, timeout_s: float) -> http.client.HTTPConnection:
        """A connection to the SageMaker listener; the only way to reach it."""
        if self._broker is None:
            raise ConnectionRefusedError("the local Triton is not running")
        return _BrokeredConnection(self._broker, timeout_s)

    def _prepare_binaries(self) -> Path:
        dist, _ = pytriton_dist()
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        stub = dist / "python_backend_stubs" / version / STUB_NAME
        if not stub.is_file():
            shipped = ", ".join(sorted(p.name for p in (dist / "python_backend_stubs").iterdir()))
            raise TritonStartError(
                f"no python-backend stub for Python {version} in nvidia-pytriton; has {shipped}"
            )
        target = self.workdir / "tritonserver"
        shutil.copytree(
            dist, target, ignore=shutil.ignore_patterns("python_backend_stubs"), dirs_exist_ok=True
        )
        shutil.copy2(stub, target / "backends" / "python" / STUB_NAME)
        return target

    def _environment(self) -> dict[str, str]:
        _, libs = pytriton_dist()
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [env.get("LD_LIBRARY_PATH"), str(libs)]))
        env["PATH"] = os.pathsep.join([str(Path(sys.exec_prefix) / "bin"), env.get("PATH", "")])
        # The endpoint container's environment, and the ping mode tritonserver gets from it there: liveness
        # (with readiness, one archive that failed to load turns every later ping into a 400, and the platform
        # would take the container for dead; triton_mme/core/triton_container.py).
        env.update(CONTAINER_ENVIRONMENT)
        env[PING_MODE_VARIABLE] = server_ping_mode(CONTAINER_ENVIRONMENT)
        return env

    def command(self, binaries: Path) -> list[str]:
        repository = self.workdir / "empty-repository"
        repository.mkdir(parents=True, exist_ok=True)
        # A unique shared-memory prefix keeps two local servers on one host out of each other's regions.
        shm_prefix = f"local-triton-{os.getpid()}-{secrets.token_hex(3)}-"
        return [
            str(binaries / "bin" / "tritonserver"),
            f"--model-repository={repository}",
            "--model-control-mode=explicit",
            "--allow-sagemaker=true",
            f"--sagemaker-port={PLATFORM.limits.sagemaker_container.port}",
            "--allow-http=false",
            "--allow-grpc=false",
            "--allow-metrics=false",
            f"--backend-directory={binaries / 'backends'}",
            f"--backend-config=python,shm-region-prefix-name={shm_prefix}",
            f"--exit-timeout-secs={self.exit_timeout_s}",
            "--strict-readiness=true",
            # As the image's entry point passes them: model namespacing (the log names models
            # `<repository>::<TargetModel>`) and the log levels.
            *serve_flags(CONTAINER_ENVIRONMENT),
        ]

    def start(self, *, ready_timeout_s: float = 60.0) -> None:
        if self._process is not None:
            raise TritonStartError("this tritonserver is already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        broker = Broker()
        command = broker.launcher_command(
            PLATFORM.limits.sagemaker_container.port, self.command(self._prepare_binaries())
        )
        with self.log_path.open("ab") as log:
            try:
                self._process = subprocess.Popen(
                    command,
                    env=self._environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                    pass_fds=(broker.child_end.fileno(),),
                )
            except BaseException:
                broker.close()
                raise
        broker.started()
        self._broker = broker
        self._wait_ready(ready_timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                status, tail = self._process.returncode, self.log_tail()
                self._process = None
                self._close_broker()
                if status == ISOLATION_FAILED:
                    raise TritonStartError(tail.removeprefix("error: "))
                raise TritonStartError(f"tritonserver exited during start-up: {tail}")
            if self.ping():
                return
            time.sleep(0.2)
        self.stop()
        raise TritonStartError(f"tritonserver not ready after {timeout_s:.0f} s; see {self.log_path}")

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ping(self) -> bool:
        connection = self.connection(2)
        try:
            connection.request("GET", "/ping")
            return connection.getresponse().status == 200
        except OSError:
            return False
        finally:
            connection.close()

    def log_tail(self, lines: int = 1) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) if text else "(empty log)"

    def stop(self) -> None:
        """SIGINT (Triton unloads models and stops its stubs), then SIGKILL the whole group on timeout."""
        process, self._process = self._process, None
        if process is None:
            self._close_broker()
            return
        group = process.pid
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=self.exit_timeout_s + 5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            process.wait(timeout=10)
        # Stubs normally exit with the server; any left in the group are killed rather than orphaned.
        deadline = time.monotonic() + 5
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_members(group):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        self._close_broker()

    def _close_broker(self) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            broker.close()

    def __enter__(self) -> TritonServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
