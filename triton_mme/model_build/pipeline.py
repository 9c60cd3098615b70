"""The build pipeline: catalog -> (export -> verify -> package) per (model, format) -> manifest.json.

Programmatic entry points:
- build_catalog(catalog, out_dir, *, only=None, weights_override=None, skip_formats=(), ...) -> Manifest
- build_archive(entry, fmt, out_dir, ...) -> ArchiveRecord (one verified archive, no cache)
- export_model(entry, fmt, workdir, ...) -> ExportedModel (exported and verified, not packaged)
- export_onnx(entry, workdir, *, weights=None, optimize=True) -> Path
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triton_mme.archive_inspection import inspect_archive
from triton_mme.catalog import Catalog, CatalogError, ModelEntry
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.files import file_sha256, write_atomically
from triton_mme.core.formats import Format, Weights
from triton_mme.core.golden import GOLDEN_ROWS, GoldenData
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest, Provenance
from triton_mme.core.naming import GOLDEN_ROLE, MODEL_FILE_NAMES, companion_file_name, model_directory
from triton_mme.core.platform import PLATFORM
from triton_mme.core.triton_config import render_config
from triton_mme.model_build.allocator import return_freed_memory_eagerly
from triton_mme.model_build.cache import BuildCache, builder_version, cache_key, companions_in_place
from triton_mme.model_build.exporters import (
    ExportContext,
    ExportedModel,
    ExportError,
    exporter_for,
    verification_batches,
)
from triton_mme.model_build.model_config import build_model_config
from triton_mme.model_build.packaging import write_archive
from triton_mme.model_build.placement import placed
from triton_mme.model_build.progress import ARCHIVE_STEPS, BAR_FORMAT, BuildProgress, gib, steps_for

if TYPE_CHECKING:
    from triton_mme.model_build.sources import Companions, LoadedModel

# TensorRT reads the ONNX export, so ONNX goes first when a model has both.
FORMAT_ORDER = (Format.ONNX, Format.TORCHSCRIPT, Format.TENSORRT)


class BuildError(UserError, RuntimeError):
    """A build that did not complete; the message is one line."""


@dataclass(frozen=True)
class ArchiveOutcome:
    """A built or reused archive; seconds and peak_bytes cover its own steps and its model's shared steps
    (load, reference: their time split between the model's archives), peak_bytes the build process's
    peak resident memory over them (None where the platform does not report it)."""

    record: ArchiveRecord
    cached: bool
    seconds: float
    peak_bytes: int | None = None


def effective_entry(entry: ModelEntry, weights: Weights | None) -> ModelEntry:
    return entry if weights is None else entry.model_copy(update={"weights": weights})


def _jobs(entry: ModelEntry, skip: frozenset[Format]) -> list[Format]:
    return [fmt for fmt in FORMAT_ORDER if fmt in entry.formats and fmt not in skip]


def _check_tensorrt(entries: list[ModelEntry], skip: frozenset[Format], triton_tag: str) -> None:
    if any(Format.TENSORRT in _jobs(e, skip) for e in entries):
        from triton_mme.model_build.exporters.tensorrt import require_tensorrt

        try:
            require_tensorrt(triton_tag)
        except ExportError as error:
            raise BuildError(str(error)) from None


def _check_sources(entries: list[ModelEntry]) -> None:
    if not entries:
        return
    import torchvision

    from triton_mme.sizing.hf_config import resolve_hf_config

    known = set(torchvision.models.list_models())
    for entry in entries:
        if entry.architecture_id and entry.architecture_id not in known:
            field = "source" if entry.source_kind == "torchvision" else "architecture"
            raise CatalogError(
                f"model '{entry.name}': {field}: torchvision has no model '{entry.architecture_id}'; "
                f"allowed e.g. resnet50, mobilenet_v3_small, squeezenet1_1"
            )
        if entry.source_kind == "huggingface" and entry.weights is Weights.RANDOM:
            resolve_hf_config(entry)


# The golden inputs come from their own seed, apart from the samples the exports are verified with.
GOLDEN_SEED = 20


def golden_for(loaded: LoadedModel, exported: ExportedModel) -> GoldenData:
    """GOLDEN_ROWS inputs and PyTorch's outputs for them, under the archive's own tensor names.

    The archive's tensors are the model's in order (TorchScript renames them INPUT__i / OUTPUT__i, an ONNX
    graph keeps the export's names), so each is matched by position and checked by datatype.
    """
    if len(exported.inputs) != len(loaded.inputs) or len(exported.outputs) != len(loaded.output_names):
        raise BuildError(
            f"{loaded.entry.name}/{exported.format.value}: the archive has {len(exported.inputs)} inputs and "
            f"{len(exported.outputs)} outputs, the model {len(loaded.inputs)} and {len(loaded.output_names)}"
        )
    for served, model in zip(exported.inputs, loaded.inputs, strict=True):
        if served.datatype != model.datatype:
            raise BuildError(
                f"{loaded.entry.name}/{exported.format.value}: input '{served.name}' is {served.datatype}, "
                f"the model's '{model.name}' is {model.datatype}"
            )
    expected = loaded.expected(GOLDEN_ROWS, seed=GOLDEN_SEED)
    return GoldenData(
        inputs={s.name: expected.feeds[m.name] for s, m in zip(exported.inputs, loaded.inputs, strict=True)},
        outputs={
            s.name: expected.outputs[name]
            for s, name in zip(exported.outputs, loaded.output_names, strict=True)
        },
    )


def record_expectations(loaded: LoadedModel) -> None:
    """PyTorch's outputs for every batch the exports are verified at and for the golden data, computed
    while the module is still loaded."""
    for batch in verification_batches(loaded.entry.max_batch_size):
        loaded.expected(batch)
    loaded.expected(GOLDEN_ROWS, seed=GOLDEN_SEED)


def _write_companions(companions: Companions, out_dir: Path, extra: dict[str, bytes]) -> dict[str, str]:
    """Write each companion file under its content-addressed name; role -> file name."""
    names = {}
    for role, content in sorted({**companions.files, **extra}.items()):
        name = companion_file_name(role, hashlib.sha256(content).hexdigest())
        if not (out_dir / name).is_file():
            write_atomically(out_dir / name, content)
        names[role] = name
    return names


def _record(
    entry: ModelEntry,
    exported: ExportedModel,
    packed_path: Path,
    sha256: str,
    size: int,
    companions: Companions,
    files: dict[str, str],
) -> ArchiveRecord:
    return ArchiveRecord(
        name=entry.name,
        format=exported.format.value,
        target_model=packed_path.name,
        sha256=sha256,
        size_bytes=size,
        source=entry.source,
        weights=entry.weights.value,
        max_batch_size=entry.max_batch_size,
        inputs=exported.inputs,
        outputs=exported.outputs,
        details=exported.details,
        preprocessing=companions.preprocessing,
        files=files,
        provenance=Provenance(source=entry.source, sha256=entry.sha256, builder=builder_version()),
    )


def _export_verified(loaded: LoadedModel, fmt: Format, context: ExportContext) -> ExportedModel:
    """One format on its own: export, release nothing, optimise, verify."""
    exporter = exporter_for(fmt)
    exported = exporter.optimise(loaded, exporter.export(loaded, context), context)
    exported.details.update(exporter.verify(loaded, exported))
    return exported


def _package(loaded: LoadedModel, exported: ExportedModel, out_dir: Path) -> ArchiveRecord:
    entry, companions = loaded.entry, loaded.companions
    fmt = exported.format
    model_dir = model_directory(entry.name, fmt)
    config = build_model_config(
        entry,
        fmt,
        model_name=model_dir,
        inputs=exported.inputs,
        outputs=exported.outputs,
        model_sha256=file_sha256(exported.model_file),
    )
    packed = write_archive(
        out_dir,
        name=entry.name,
        fmt=fmt,
        model_dir=model_dir,
        config_text=render_config(config),
        model_file=exported.model_file,
        model_file_name=MODEL_FILE_NAMES[fmt],
    )
    # What the build writes is what every reader accepts: its own archive passes the archive policy.
    inspect_archive(packed.path, packed=True)
    golden = golden_for(loaded, exported).to_bytes()
    files = _write_companions(companions, out_dir, {GOLDEN_ROLE: golden})
    return _record(entry, exported, packed.path, packed.sha256, packed.size_bytes, companions, files)


def export_model(
    entry: ModelEntry,
    fmt: Format,
    workdir: Path,
    *,
    weights: Weights | None = None,
    triton_tag: str = PLATFORM.images.default_tag.value,
) -> ExportedModel:
    """Export one (model, format) into workdir and verify it against PyTorch; nothing is packaged."""
    from triton_mme.model_build.sources import load_model

    entry = effective_entry(entry, weights)
    workdir.mkdir(parents=True, exist_ok=True)
    return _export_verified(load_model(entry), fmt, ExportContext(workdir, triton_tag))


def export_onnx(
    entry: ModelEntry, workdir: Path, *, weights: Weights | None = None, optimize: bool = True
) -> Path:
    """The ONNX file the build would package (optimize=True) or the plain torch.onnx export."""
    from triton_mme.model_build.exporters.onnx import export_plain
    from triton_mme.model_build.sources import load_model

    if optimize:
        return export_model(entry, Format.ONNX, workdir, weights=weights).model_file
    workdir.mkdir(parents=True, exist_ok=True)
    return export_plain(load_model(effective_entry(entry, weights)), workdir / "plain.onnx")


def build_archive(
    entry: ModelEntry,
    fmt: Format,
    out_dir: Path,
    *,
    weights: Weights | None = None,
    triton_tag: str = PLATFORM.images.default_tag.value,
) -> ArchiveRecord:
    """Export, verify and package one archive into out_dir (no cache, no manifest)."""
    from triton_mme.model_build.sources import load_model

    entry = effective_entry(entry, weights)
    out_dir.mkdir(parents=True, exist_ok=True)
    loaded = load_model(entry)
    with tempfile.TemporaryDirectory(prefix=".work-", dir=out_dir) as scratch:
        context = ExportContext(Path(scratch), triton_tag)
        return _package(loaded, _export_verified(loaded, fmt, context), out_dir)


def _kept_records(out_dir: Path, catalog: Catalog, rebuilt: set[tuple[str, str]]) -> list[ArchiveRecord]:
    """Archives of an earlier build that this run did not touch but that are still in the catalog."""
    path = out_dir / MANIFEST_FILE_NAME
    if not path.is_file():
        return []
    try:
        previous = Manifest.read(path)
    except ValueError:
        return []
    # Computed once: taken inside the loop, the difference made this quadratic in the catalog's size.
    kept = {(m.name, f.value) for m in catalog.models for f in m.formats} - rebuilt
    return [
        record
        for record in previous.archives
        if (record.name, record.format) in kept
        and (out_dir / record.target_model).is_file()
        and companions_in_place(out_dir, record)
    ]


def _remove_leftovers(out_dir: Path) -> None:
    """Scratch files of an interrupted build (one build per out_dir at a time)."""
    for scratch in out_dir.glob(".work-*"):
        shutil.rmtree(scratch, ignore_errors=True)
    for partial in out_dir.glob(".partial-*"):
        partial.unlink(missing_ok=True)


def cache_miss_line(name: str, fmt: Format, why: str) -> str:
    return f"{name}/{fmt.value}: build cache record not used ({why}); building it"


def report_line(outcome: ArchiveOutcome) -> str:
    record = outcome.record
    how = "cached" if outcome.cached else f"built in {outcome.seconds:.1f} s"
    if outcome.peak_bytes is not None:
        how += f", peak {gib(outcome.peak_bytes)}"
    return f"{record.name}/{record.format}: {record.target_model} ({record.size_bytes / 1e6:.1f} MB, {how})"


def build_catalog(
    catalog: Catalog,
    out_dir: str | Path,
    *,
    only: str | None = None,
    weights_override: Weights | None = None,
    skip_formats: Iterable[Format] = (),
    triton_tag: str = PLATFORM.images.default_tag.value,
    progress: bool = True,
    on_archive: Callable[[ArchiveOutcome], None] | None = None,
    workers: int = 1,
) -> Manifest:
    """Build every (model, format) of the catalog into verified archives, then write manifest.json.

    Raises CatalogError before any work for entries that cannot be built (every checkpoint is fetched and
    verified first), BuildError (one line) when any archive fails; a failed archive leaves nothing behind and
    no manifest is written. `workers` > 1 builds that many entries at once, each in its own process.
    """
    from tqdm import tqdm

    return_freed_memory_eagerly()  # each step's peak then counts what it holds, not earlier steps' heap
    out_dir = Path(out_dir)
    skip = frozenset(skip_formats)
    selected = [catalog.entry(only)] if only else list(catalog.models)
    entries = [effective_entry(e, weights_override) for e in selected]
    _check_tensorrt(entries, skip, triton_tag)
    cache = BuildCache(out_dir)
    plans = [_plan(entry, _jobs(entry, skip), cache, triton_tag) for entry in entries]
    # A cache hit proves its entry's source; only entries with something to export are checked (and
    # a rebuild with nothing to do never imports the model libraries).
    _check_sources([plan.entry for plan in plans if plan.pending])
    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(out_dir)
    checkpoints = fetch_checkpoints([plan.entry for plan in plans if plan.pending], catalog.base_dir, out_dir)
    total = sum(len(_jobs(e, skip)) for e in entries)
    records: list[ArchiveRecord] = []
    failures: list[str] = []
    steps = sum(len(plan.hits) * len(ARCHIVE_STEPS) + (steps_for(len(plan.pending)) if plan.pending else 0)
                for plan in plans)  # fmt: skip
    with tqdm(
        total=steps, bar_format=BAR_FORMAT, file=sys.stderr, disable=not progress, dynamic_ncols=True
    ) as bar:
        for plan in plans:
            skipped = sorted(f.value for f in skip & set(plan.entry.formats))
            if skipped:
                bar.write(f"{plan.entry.name}: skipping {', '.join(skipped)} (asked to)", file=sys.stderr)
            for fmt, why in plan.misses.items():
                bar.write(cache_miss_line(plan.entry.name, fmt, why), file=sys.stderr)

        def report(outcome: ArchiveOutcome) -> None:
            records.append(outcome.record)
            bar.write(report_line(outcome), file=sys.stderr)
            if on_archive:
                on_archive(outcome)

        if workers > 1:
            _build_in_workers(plans, out_dir, triton_tag, checkpoints, workers, failures, bar, report)
        else:
            for plan in plans:
                checkpoint = checkpoints.get(plan.entry.name)
                progress_of = BuildProgress(bar)
                for outcome in _build_entry(
                    plan, out_dir, cache, triton_tag, failures, progress_of, checkpoint
                ):
                    report(outcome)
    from triton_mme.model_build.checkpoint_files import SOURCES_DIR_NAME, release_local_copies

    release_local_copies(entries, out_dir / SOURCES_DIR_NAME)
    if failures:
        raise BuildError(f"{len(failures)} of {total} archives failed; first: {failures[0]}")
    rebuilt = {(r.name, r.format) for r in records}
    archives = sorted([*records, *_kept_records(out_dir, catalog, rebuilt)], key=lambda r: (r.name, r.format))
    manifest = Manifest(archives=tuple(placed(archives, catalog)))
    write_atomically(out_dir / MANIFEST_FILE_NAME, manifest.to_json())
    return manifest


@dataclass(frozen=True)
class _Plan:
    """One catalog entry's archives: cache key per format, and what the cache already holds."""

    entry: ModelEntry
    keys: dict[Format, str]
    hits: dict[Format, ArchiveRecord]
    # A record found under the key but not earned (BuildCache.lookup): why, per format. Built again.
    misses: dict[Format, str] = dataclasses.field(default_factory=dict)

    @property
    def pending(self) -> list[Format]:
        return [fmt for fmt in self.keys if fmt not in self.hits]


def _keys(entry: ModelEntry, formats: list[Format], triton_tag: str) -> dict[Format, str]:
    keys: dict[Format, str] = {}
    for fmt in formats:
        extra = {}
        if fmt is Format.TENSORRT:
            from triton_mme.model_build.exporters.tensorrt import require_tensorrt

            extra = {"triton_tag": triton_tag, "tensorrt": str(require_tensorrt(triton_tag).__version__)}
        keys[fmt] = cache_key(entry, fmt, extra=extra)
    return keys


def catalog_cache_keys(
    catalog: Catalog,
    *,
    triton_tag: str = PLATFORM.images.default_tag.value,
    skip_formats: Iterable[Format] = (),
) -> dict[str, str]:
    """The build cache key of every (model, format) `build_catalog` would build here, as `<name>/<format>`
    -> key: what a store's shared cache is looked up by (store.build_cache). Raises BuildError when the
    catalog asks for TensorRT and this machine has none."""
    skip = frozenset(skip_formats)
    _check_tensorrt(list(catalog.models), skip, triton_tag)
    return {
        f"{entry.name}/{fmt.value}": key
        for entry in catalog.models
        for fmt, key in _keys(entry, _jobs(entry, skip), triton_tag).items()
    }


def _plan(entry: ModelEntry, formats: list[Format], cache: BuildCache, triton_tag: str) -> _Plan:
    keys = _keys(entry, formats, triton_tag)
    found = {fmt: cache.lookup(key, entry, fmt) for fmt, key in keys.items()}
    hits = {fmt: hit for fmt, hit in found.items() if isinstance(hit, ArchiveRecord)}
    misses = {fmt: why for fmt, why in found.items() if isinstance(why, str)}
    return _Plan(entry, keys, hits, misses)


def _fail(failures: list[str], progress: BuildProgress, where: str, error: BaseException, steps: int) -> None:
    failures.append(f"{where}: {first_line(error)}")
    progress.bar.write(f"{where}: FAILED: {first_line(error)}", file=sys.stderr)
    progress.skip(steps)


def fetch_checkpoints(entries: list[ModelEntry], base_dir: Path, out_dir: Path) -> dict[str, Path]:
    """The verified local copy of every checkpoint entry's source, by model name, checked as synthesis checks
    it (kind, headers, config); CatalogError (one line) for the first that cannot be used."""
    from triton_mme.model_build.checkpoint_files import SOURCES_DIR_NAME, materialize
    from triton_mme.sizing.checkpoint_sources import inspect_local

    copies = {}
    for entry in entries:
        if entry.checkpoint_kind is None:
            continue
        copy = materialize(entry, base_dir=base_dir, cache_dir=out_dir / SOURCES_DIR_NAME)
        inspect_local(entry, copy)
        copies[entry.name] = copy
    return copies


def _build_in_worker(
    plan: _Plan, out_dir: Path, triton_tag: str, checkpoint: Path | None, threads: int
) -> tuple[list[ArchiveOutcome], list[str]]:
    """One entry in a worker process, PyTorch on `threads` threads: its outcomes and failures, with no
    progress bar of its own."""
    import torch
    from tqdm import tqdm

    torch.set_num_threads(threads)
    return_freed_memory_eagerly()
    failures: list[str] = []
    with tqdm(total=0, disable=True) as bar:
        progress = BuildProgress(bar)
        outcomes = list(
            _build_entry(plan, out_dir, BuildCache(out_dir), triton_tag, failures, progress, checkpoint)
        )
    return outcomes, failures


def _build_in_workers(
    plans: list[_Plan],
    out_dir: Path,
    triton_tag: str,
    checkpoints: dict[str, Path],
    workers: int,
    failures: list[str],
    bar: Any,
    report: Callable[[ArchiveOutcome], None],
) -> None:
    """Each entry with pending archives in one of `workers` processes (forked from a fork server that
    imported PyTorch once: no state shared with this one); cached archives are reported here. Archives,
    companions and cache records are written atomically under content-addressed names, so workers never
    write the same path with different bytes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    for plan in plans:
        for hit in plan.hits.values():
            bar.update(len(ARCHIVE_STEPS))
            report(ArchiveOutcome(hit, cached=True, seconds=0.0))
    pending = [
        dataclasses.replace(plan, keys={fmt: plan.keys[fmt] for fmt in plan.pending}, hits={})
        for plan in plans
        if plan.pending
    ]
    # Workers fork from a server that imported PyTorch once (forkserver, with the build's heavy modules
    # preloaded), instead of each spawned worker importing it again: its pages are shared copy-on-write,
    # and the server holds no thread or state of this process.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(WORKER_PRELOAD))
    threads = worker_threads(workers)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(
                _build_in_worker, plan, out_dir, triton_tag, checkpoints.get(plan.entry.name), threads
            ): plan
            for plan in pending
        }
        for future in as_completed(futures):
            plan = futures[future]
            outcomes, failed = future.result()
            bar.update(steps_for(len(plan.pending)))
            for line in failed:
                where, _, message = line.partition(": ")
                bar.write(f"{where}: FAILED: {message}", file=sys.stderr)
            failures.extend(failed)
            for outcome in outcomes:
                report(outcome)


def worker_threads(workers: int) -> int:
    """PyTorch's threads in each of `workers`: their share of the cores, at least one. With a thread per
    core in every worker, OpenMP's waiting threads spin on cores the other workers hold
    (benchmarks/results/build-workers.md)."""
    return max(1, usable_cores() // workers)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# What every worker imports before it builds: loaded once, in the fork server.
WORKER_PRELOAD = ("torch", "torchvision", "onnx", "onnxruntime", "triton_mme.model_build.pipeline")


def _build_entry(
    plan: _Plan,
    out_dir: Path,
    cache: BuildCache,
    triton_tag: str,
    failures: list[str],
    progress: BuildProgress,
    checkpoint: Path | None = None,
) -> Iterable[ArchiveOutcome]:
    """The entry's pending archives: load the model and record PyTorch's outputs once, export every format,
    release the PyTorch module, then optimise, verify and package each export.

    Only the exports need the module; releasing it first keeps a large model's PyTorch weights out of
    the fusion, verification and packaging steps, whose own copies of the weights come on top.
    """
    entry, keys = plan.entry, plan.keys
    for hit in plan.hits.values():
        progress.skip(len(ARCHIVE_STEPS))
        yield ArchiveOutcome(hit, cached=True, seconds=0.0)
    pending = plan.pending
    if not pending:
        return
    from triton_mme.model_build.sources import load_model

    ran = 0
    try:
        ran += 1
        with progress.step(entry.name, "load"):
            loaded = load_model(entry, checkpoint=checkpoint)
        ran += 1
        with progress.step(entry.name, "reference"):
            record_expectations(loaded)
    except Exception as error:
        for fmt in pending:
            failures.append(f"{entry.name}/{fmt.value}: cannot load the model: {first_line(error)}")
        progress.bar.write(f"{entry.name}: FAILED: {first_line(error)}", file=sys.stderr)
        progress.skip(steps_for(len(pending)) - ran)
        return
    with tempfile.TemporaryDirectory(prefix=".work-", dir=out_dir) as scratch:
        context = ExportContext(Path(scratch), triton_tag)
        exported: dict[Format, ExportedModel] = {}
        for fmt in pending:
            try:
                with progress.step(entry.name, "export", fmt):
                    exported[fmt] = exporter_for(fmt).export(loaded, context)
            except Exception as error:
                _fail(failures, progress, f"{entry.name}/{fmt.value}", error, len(ARCHIVE_STEPS) - 1)
        loaded.release()
        for fmt, export in exported.items():
            exporter = exporter_for(fmt)
            step = "optimise"
            try:
                with progress.step(entry.name, step, fmt):
                    export = exporter.optimise(loaded, export, context)
                step = "verify"
                with progress.step(entry.name, step, fmt):
                    export.details.update(exporter.verify(loaded, export))
                step = "package"
                with progress.step(entry.name, step, fmt):
                    record = _package(loaded, export, out_dir)
            except Exception as error:
                left = len(ARCHIVE_STEPS) - 1 - ARCHIVE_STEPS.index(step)
                _fail(failures, progress, f"{entry.name}/{fmt.value}", error, left)
                continue
            cache.store(keys[fmt], record)
            cost = progress.archive_cost(entry.name, fmt, len(pending))
            yield ArchiveOutcome(record, cached=False, seconds=cost.seconds, peak_bytes=cost.peak_bytes)
