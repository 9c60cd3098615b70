"""Where the serving check runs: the real SageMaker Triton image, or the project's local CPU Triton.

Both are a Triton whose SageMaker listener serves the multi-model routes (`routes`); they differ in how the
server starts, what an unpacked archive needs before it can load there, and whether a GPU can be measured.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.core.errors import UserError
from triton_mme.core.platform import PLATFORM
from triton_mme.serving_check import gpu

READY_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0


class TargetError(UserError):
    """The server could not be started; one line."""


class NotRunnableHere(Exception):
    """This archive cannot run on this target at all (a TensorRT plan on a CPU); the message says why."""


class LoadRefused(Exception):
    """The archive cannot be prepared for loading here; the message is one line."""


class ServingTarget(Protocol):
    """A running Triton with the SageMaker multi-model routes."""

    server: str  # what the report names as the server
    gpu: str | None
    on_gpu: bool
    routes: SageMakerRoutes

    def prepare(self, target_model: str, model_dir: Path) -> None:
        """Whatever an unpacked model directory needs before `POST /models` (NotRunnableHere, LoadRefused)."""

    def memory_used_mib(self) -> float | None:
        """Device memory in use now, or None where there is no GPU to measure."""


class SageMakerTriton:
    """The image's own `serve` (Triton's docker/sagemaker/serve), started as SageMaker starts a multi-model
    container: SAGEMAKER_MULTI_MODEL=true and the listener's port in SAGEMAKER_BIND_TO_PORT, everything else
    from the environment (the endpoint's container environment is the check project's)."""

    on_gpu: bool = True

    def __init__(
        self,
        *,
        log_path: Path | None,
        triton_tag: str,
        command: Sequence[str] = (PLATFORM.limits.sagemaker_container.serve_command,),
        port: int = PLATFORM.limits.sagemaker_container.port,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ):
        self.log_path = log_path
        self.command = list(command)
        self.port = port
        self.ready_timeout_s = ready_timeout_s
        self.routes = SageMakerRoutes.at_port(port)
        self.gpu = gpu.gpu_name()
        driver = gpu.driver_version()
        where = f" on {self.gpu}, NVIDIA driver {driver}" if self.gpu else ""
        self.server = f"sagemaker-tritonserver:{triton_tag}{where}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        environment = {
            **os.environ,
            **PLATFORM.multi_model_environment,
            "SAGEMAKER_BIND_TO_PORT": str(self.port),
        }
        with contextlib.ExitStack() as files:
            log = None
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                log = files.enter_context(self.log_path.open("ab"))
            try:
                self._process = subprocess.Popen(
                    self.command,
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT if log else None,
                    start_new_session=True,
                )
            except OSError as error:
                raise TargetError(
                    f"cannot start {' '.join(self.command)!r} ({error.strerror}); --server sagemaker runs "
                    "inside the sagemaker-tritonserver image"
                ) from None
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                status = self._process.returncode
                self._process = None
                raise TargetError(f"tritonserver exited during start-up (status {status}): {self.log_tail()}")
            if self.routes.ping():
                return
            time.sleep(0.5)
        self.stop()
        raise TargetError(f"tritonserver not ready after {self.ready_timeout_s:.0f} s: {self.log_tail()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def log_tail(self) -> str:
        """The server's last error line; its whole output is in the log above when it has no file."""
        if self.log_path is None:
            return "see tritonserver's output above"
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        errors = [line for line in lines if line.startswith("E") or "error" in line.lower()]
        return (errors or lines or ["(empty log)"])[-1]

    def prepare(self, target_model: str, model_dir: Path) -> None:
        """The image serves the archive as built: nothing to change."""

    def memory_used_mib(self) -> float | None:
        return gpu.memory_used_mib()

    def __enter__(self) -> SageMakerTriton:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class LocalCpuTriton:
    """The project's local Triton (triton_mme.local_triton): the tritonserver of the nvidia-pytriton wheel in
    a private network namespace, each archive served through the CPU stand-in that keeps its config.pbtxt."""

    on_gpu: bool = False
    gpu: str | None = None
    server: str = (
        "local CPU stand-in (tritonserver from nvidia-pytriton, python backend; docs/local-triton.md)"
    )

    def __init__(self, *, workdir: Path):
        from triton_mme.local_triton.server import TritonServer

        self.triton = TritonServer(workdir=workdir)
        self.routes = SageMakerRoutes(self.triton.connection)

    def prepare(self, target_model: str, model_dir: Path) -> None:
        from triton_mme.local_triton.standin import NotRunnableOnCpu, StandInError, install_standin

        try:
            install_standin(model_dir, where=target_model)
        except NotRunnableOnCpu as error:
            raise NotRunnableHere(str(error).removeprefix(f"{target_model}: ")) from None
        except StandInError as error:
            raise LoadRefused(str(error).removeprefix(f"{target_model}: ")) from None

    def memory_used_mib(self) -> float | None:
        return None

    def __enter__(self) -> LocalCpuTriton:
        self.triton.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.triton.stop()
