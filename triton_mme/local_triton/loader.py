"""Load archives the way the SageMaker multi-model platform does, against the local Triton's SageMaker API.

On the first invocation of a TargetModel its archive is unpacked into `<scratch>/<hash>/model` (the
platform uses /opt/ml/models/<hash>/model), the CPU stand-in is installed and Triton is asked to load it
under the TargetModel name. Past the model budget the least recently used model is unloaded and its
directory deleted, as the platform does under memory and disk pressure. Past the instance budget (each model
instance is a python backend process) the least recently used models are unloaded before the load.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from triton_mme.archive_inspection import inspect_archive
from triton_mme.client.triton_routes import Reply, SageMakerRoutes
from triton_mme.core.errors import UserError, quoted
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.core.naming import ARCHIVE_NAME
from triton_mme.core.suggest import known_names
from triton_mme.local_triton import DEFAULT_INSTANCE_BUDGET
from triton_mme.local_triton.standin import StandInError, install_standin


class ModelError(UserError):
    """A request the platform refuses; `status` is the HTTP status, the message one line."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def list_archives(models_dir: Path) -> list[str]:
    """The TargetModels a directory offers: files named by the archive naming rule."""
    return sorted(p.name for p in models_dir.iterdir() if ARCHIVE_NAME.match(p.name) and p.is_file())


def unpack(archive: Path, destination: Path, *, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> Path:
    """Unpack into `destination` atomically (a failed unpack leaves nothing); returns the model directory."""
    partial = destination.with_name(destination.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        # The same model check as `add` and `upload` (archive_inspection), on the files Triton will load; the
        # TargetModel states the model, format and content hash (identity): the endpoint caches by that name.
        extracted = inspect_archive(archive, partial, identity=True, max_unpacked_bytes=max_unpacked_bytes)
    except UserError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise ModelError(400, str(error)) from None
    partial.rename(destination)
    return destination / extracted.model_dir.name


class ModelCache:
    """Which TargetModels are loaded, in least-recently-used order, within a budget of loaded models and
    one of their model instances."""

    def __init__(
        self,
        *,
        models_dir: Path,
        scratch_dir: Path,
        routes: SageMakerRoutes,
        budget: int,
        report: Callable[[str], None] = print,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
        instance_budget: int = DEFAULT_INSTANCE_BUDGET,
    ):
        if budget < 1:
            raise ValueError(f"model budget: {budget} is not allowed; at least 1")
        if instance_budget < 1:
            raise ValueError(f"instance budget: {instance_budget} is not allowed; at least 1")
        self.models_dir = models_dir
        self.scratch_dir = scratch_dir
        self.routes = routes
        self.budget = budget
        self.instance_budget = instance_budget
        self.report = report
        self.max_unpacked_bytes = max_unpacked_bytes
        self._loaded: OrderedDict[str, Path] = OrderedDict()
        # `_lock` guards the bookkeeping only; a load holds its own model's lock, so a loaded model never
        # waits for another model's load.
        self._lock = threading.Lock()
        self._model_locks: dict[str, threading.Lock] = {}
        # Instances per loaded model, and those held by every model loaded, loading or unloading: never more
        # than the instance budget. `_room` is told whenever some are let go.
        self._instances: dict[str, int] = {}
        self._held = 0
        self._room = threading.Condition(self._lock)
        # Models Triton is unloading: loading one again waits for its unload to end.
        self._unloading: dict[str, threading.Event] = {}
        # Invocations that found their model loaded, and those that loaded it (what ModelCacheHit counts).
        self.hits = 0
        self.misses = 0

    @property
    def loaded(self) -> list[str]:
        """Loaded TargetModels, least recently used first."""
        with self._lock:
            return list(self._loaded)

    @property
    def instances(self) -> int:
        """Model instances held by models loaded, loading or unloading."""
        with self._lock:
            return self._held

    def archive_for(self, target_model: str) -> Path:
        """The archive a TargetModel names: by the archive naming rule, a file directly in models_dir."""
        if not ARCHIVE_NAME.match(target_model):
            raise ModelError(400, f"TargetModel {quoted(target_model)} is {ARCHIVE_NAME.refusal}")
        path = (self.models_dir / target_model).resolve()
        if path.parent != self.models_dir.resolve() or not path.is_file():
            known = known_names(target_model, list_archives(self.models_dir))
            raise ModelError(404, f"no archive {quoted(target_model)} in {self.models_dir}; {known}")
        return path

    def invoke(self, target_model: str, body: bytes, content_type: str) -> Reply:
        """Load the model if it is not loaded, then call it; `Reply.cache_hit` says whether it was loaded
        when the request arrived (what SageMaker's ModelCacheHit metric counts)."""
        loaded_now = self.ensure_loaded(target_model)
        reply = self.routes.invoke(target_model, body, content_type)
        if reply.status == 404:
            # Unloaded by another request between load and invoke: load it again once, as the platform would.
            loaded_now = self.ensure_loaded(target_model) or loaded_now
            reply = self.routes.invoke(target_model, body, content_type)
        with self._lock:
            if loaded_now:
                self.misses += 1
            else:
                self.hits += 1
        return replace(reply, cache_hit=not loaded_now)

    def _loaded_already(self, target_model: str) -> bool:
        with self._lock:
            if target_model in self._loaded:
                self._loaded.move_to_end(target_model)
                return True
            return False

    def ensure_loaded(self, target_model: str) -> bool:
        """Load the model unless it is loaded; True when this call loaded it (a cache miss)."""
        if self._loaded_already(target_model):
            return False
        archive = self.archive_for(target_model)
        with self._lock:
            model_lock = self._model_locks.setdefault(target_model, threading.Lock())
        with model_lock:
            if self._loaded_already(target_model):  # another request loaded it meanwhile
                return False
            with self._lock:
                unloading = self._unloading.get(target_model)
            if unloading is not None:  # not reloaded while Triton unloads it
                unloading.wait()
            self._load(target_model, archive)
            with self._lock:
                evicted = []
                while len(self._loaded) > self.budget:
                    evicted.append(self._take_oldest())
        for oldest, home in evicted:
            self._unload(oldest, home, reason=f"least recently used; budget {self.budget}")
        return True

    def unload(self, target_model: str) -> bool:
        with self._lock:
            if target_model not in self._loaded:
                return False
            home = self._take(target_model)
        self._unload(target_model, home, reason="on request")
        return True

    def _take(self, target_model: str) -> Path:
        """Move a loaded model to the unloading ones (under `_lock`); its instances stay held until then."""
        self._unloading[target_model] = threading.Event()
        return self._loaded.pop(target_model)

    def _take_oldest(self) -> tuple[str, Path]:
        oldest = next(iter(self._loaded))
        return oldest, self._take(oldest)

    def _hold_instances(self, target_model: str, instances: int) -> None:
        """Hold `instances` of the instance budget for a load, unloading least recently used models first;
        waits while the rest is held by loads and unloads under way (each ends by telling `_room`)."""
        while True:
            with self._lock:
                if self._held + instances <= self.instance_budget:
                    self._held += instances
                    return
                if not self._loaded:
                    self._room.wait()
                    continue
                oldest, home = self._take_oldest()
            budget = f"instance budget {self.instance_budget}, {target_model} needs {instances}"
            self._unload(oldest, home, reason=f"least recently used; {budget}")

    def _let_go(self, instances: int) -> None:
        with self._lock:
            self._held -= instances
            self._room.notify_all()

    def _load(self, target_model: str, archive: Path) -> None:
        started = time.perf_counter()
        home = self.scratch_dir / hashlib.sha256(target_model.encode()).hexdigest()[:16]
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        root = home / "model"
        loaded = False
        try:
            try:
                model_dir = unpack(archive, root, max_unpacked_bytes=self.max_unpacked_bytes)
                standin = install_standin(model_dir, where=target_model, max_instances=self.instance_budget)
            except StandInError as error:
                raise ModelError(400, str(error)) from None
            for change in standin.changes:
                self.report(f"{target_model}: {change}")
            self._hold_instances(target_model, standin.instances)
            try:
                reply = self.routes.load(target_model, root)
            except BaseException:
                self._let_go(standin.instances)
                raise
            if reply.status != 200:
                self._let_go(standin.instances)
                raise ModelError(
                    reply.status, f"{target_model}: Triton did not load it: {reply.error_line()}"
                )
            loaded = True
        finally:
            if not loaded:
                shutil.rmtree(home, ignore_errors=True)
        with self._lock:
            self._loaded[target_model] = home
            self._instances[target_model] = standin.instances
            self._room.notify_all()  # a loaded model can be unloaded for a load that waits
        self.report(f"{target_model}: loaded ({standin.format}) in {time.perf_counter() - started:.1f} s")

    def _unload(self, target_model: str, home: Path, *, reason: str) -> None:
        try:
            reply = self.routes.unload(target_model)
            shutil.rmtree(home, ignore_errors=True)
        finally:
            with self._lock:
                self._held -= self._instances.pop(target_model, 0)
                self._unloading.pop(target_model).set()
                self._room.notify_all()
        if reply.status != 200:
            self.report(f"{target_model}: unload answered HTTP {reply.status}: {reply.error_line()}")
        else:
            self.report(f"{target_model}: unloaded ({reason})")
