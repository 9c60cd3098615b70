"""One local multi-model endpoint: tritonserver, the model cache and the loopback front, run together."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.core.errors import printable
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.local_triton import DEFAULT_INSTANCE_BUDGET, DEFAULT_MODEL_BUDGET
from triton_mme.local_triton.loader import ModelCache, list_archives
from triton_mme.local_triton.proxy import LocalEndpoint
from triton_mme.local_triton.server import TritonServer


def print_escaped(line: str) -> None:
    """The default report: a line naming archives, config values and Triton's answers, printed escaped."""
    print(printable(line), flush=True)


class LocalTriton:
    """Serve the archives of `models_dir` on http://127.0.0.1:<port> until stopped."""

    def __init__(
        self,
        *,
        models_dir: Path,
        port: int = 0,
        model_budget: int = DEFAULT_MODEL_BUDGET,
        instance_budget: int = DEFAULT_INSTANCE_BUDGET,
        scratch_dir: Path | None = None,
        report: Callable[[str], None] = print_escaped,
        access_log: bool = False,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
        triton_log: Path | None = None,
    ):
        if not models_dir.is_dir():
            raise FileNotFoundError(
                f"--models: {models_dir} is not a directory; build archives with `make build-models`"
            )
        if not list_archives(models_dir):
            raise FileNotFoundError(
                f"--models: no *.tar.gz archives in {models_dir}; run `make build-models` first"
            )
        if scratch_dir is not None:
            scratch_dir.mkdir(parents=True, exist_ok=True)
        # A fresh directory per run, removed at stop: nothing of a run survives it.
        self.scratch_dir = Path(tempfile.mkdtemp(prefix="local-triton-", dir=scratch_dir))
        self.triton = TritonServer(workdir=self.scratch_dir, log_path=triton_log)
        self.cache = ModelCache(
            models_dir=models_dir,
            scratch_dir=self.scratch_dir / "models",
            routes=SageMakerRoutes(self.triton.connection),
            budget=model_budget,
            instance_budget=instance_budget,
            report=report,
            max_unpacked_bytes=max_unpacked_bytes,
        )
        try:
            self.endpoint = LocalEndpoint(self.cache, port=port, ping=self.triton.ping, access_log=access_log)
        except OSError as error:
            self._remove_scratch()
            raise OSError(f"--port {port}: cannot listen on 127.0.0.1 ({error.strerror})") from None

    @property
    def url(self) -> str:
        return self.endpoint.url

    def start(self) -> LocalTriton:
        try:
            self.triton.start()
            self.endpoint.start_in_background()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.endpoint.stop()
        self.triton.stop()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        shutil.rmtree(self.scratch_dir, ignore_errors=True)

    def __enter__(self) -> LocalTriton:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
