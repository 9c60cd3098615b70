"""Operating the model store: list what is published, add an archive built elsewhere, remove one. Each
returns what it did; the command line only prints it.

Every write goes through `publish`: archives are never overwritten, a manifest is made current only
after everything it names is in the bucket, and the live manifest changes only conditionally on the
version read (a concurrent `add` or `remove` is re-read, never lost).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_mme.archive_inspection import ArchiveContents
from triton_mme.core.bounded import read_bytes
from triton_mme.core.files import file_sha256, private_copy, private_directory
from triton_mme.core.formats import Format
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES, MAX_REPORT_BYTES
from triton_mme.core.manifest import ArchiveRecord, Manifest
from triton_mme.core.naming import ARCHIVE_NAME, MODEL_NAME
from triton_mme.core.report_key import report_key
from triton_mme.core.serving_report import ServingReport
from triton_mme.store.intents import ADD, REMOVE, Step, intent, no_step
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import (
    LocalObject,
    PublishError,
    head,
    publish_objects,
    read_published_manifest,
    update_live_manifest,
)


@dataclass(frozen=True)
class ListedArchive:
    target_model: str
    size: int | None  # None: named by the manifest but missing from the bucket
    record: ArchiveRecord | None  # None: in the bucket but not named by the manifest


@dataclass(frozen=True)
class Listing:
    archives: tuple[ListedArchive, ...]
    manifest_entries: int

    @property
    def missing(self) -> list[str]:
        return [a.target_model for a in self.archives if a.size is None]


def _list_objects(store: ModelStoreClient, prefix: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for page in store.s3.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=prefix):
        objects.extend(page.get("Contents", []))
    return objects


def list_store(store: ModelStoreClient) -> Listing:
    """Archives under the model prefix with the current manifest's names, and any it names but lacks."""
    prefixes = store.prefixes
    manifest = read_published_manifest(store) or Manifest()
    records = {record.target_model: record for record in manifest.archives}
    listed, present = [], set()
    for item in sorted(_list_objects(store, prefixes.models), key=lambda o: o["Key"]):
        key = item["Key"].removeprefix(prefixes.models)
        present.add(key)
        listed.append(ListedArchive(key, int(item["Size"]), records.get(key)))
    listed += [ListedArchive(key, None, records[key]) for key in sorted(set(records) - present)]
    return Listing(tuple(listed), len(manifest.archives))


@dataclass(frozen=True)
class AddReport:
    checks: tuple[str, ...]
    not_run: tuple[str, ...]
    uploaded: tuple[str, ...]
    skipped: tuple[str, ...]
    manifest_key: str | None
    record: ArchiveRecord | None


def check_archive_name(path: Path, logical_name: str | None) -> None:
    """The file name becomes the TargetModel (the object key) and `--name` the manifest's model name:
    both follow their naming rules before anything is read."""
    if logical_name is not None:
        MODEL_NAME.check(logical_name, where="--name")
    ARCHIVE_NAME.check(path.name, where="ARCHIVE (its file name becomes the TargetModel)")


def archive_record(
    contents: ArchiveContents, *, name: str, sha256: str, size: int, source: str, weights: str
) -> ArchiveRecord:
    """A manifest entry for a verified archive, from its own config.pbtxt."""
    return ArchiveRecord(
        name=name,
        format=contents.format.value,
        target_model=contents.path.name,
        sha256=sha256,
        size_bytes=size,
        source=source,
        weights=weights,
        max_batch_size=contents.config.max_batch_size,
        inputs=contents.inputs,
        outputs=contents.outputs,
        details={"published_by": "add"},
    )


# What the TensorRT gate accepts, named by every refusal.
_TENSORRT_EVIDENCE = (
    "allowed only a report that triton-mme serving-check wrote and signed on this machine, for this file "
    "(run it here), or --unchecked-tensorrt (recorded as unchecked in the manifest)"
)


def _tensorrt_checked(
    path: Path, sha256: str, serving_report: Path | None, unchecked: bool, key_file: Path | None
) -> dict[str, Any]:
    """A TensorRT plan cannot be opened here: it is published only with a serving report in which this
    very file passed, signed with this user's report key (core.report_key), or marked unchecked on purpose.
    A report is text anyone can write; only the signature ties it to a check that ran, and only the
    recorded sha256 ties it to this file."""
    if serving_report is not None:
        report = ServingReport.from_json(
            read_bytes(serving_report, max_bytes=MAX_REPORT_BYTES), where=str(serving_report)
        )
        key = report_key(key_file) if key_file is not None else None
        if report.signature is None:
            problem = "the serving report is not signed"
        elif key is None:
            problem = f"no report key on this machine ({key_file}) to check the serving report's signature"
        elif not report.signed_with(key):
            problem = "the serving report's signature does not match (edited, or signed on another machine)"
        else:
            problem = _served_problem(report, path.name, sha256)
        if problem:
            raise PublishError(f"{serving_report}: {problem}; {_TENSORRT_EVIDENCE}")
        return {"checked": f"serving report {report.manifest_sha256[:16]} on {report.server}"}
    if unchecked:
        return {"checked": "unchecked: a TensorRT plan published with --unchecked-tensorrt"}
    raise PublishError(
        f"{path.name}: a TensorRT plan cannot be loaded here; allowed with --serving-report FILE (a serving "
        "report in which it passed) or --unchecked-tensorrt (recorded as unchecked in the manifest)"
    )


def _served_problem(report: ServingReport, target_model: str, sha256: str) -> str:
    """Why the report's entry does not vouch for this file ("" when it does)."""
    served = report.find(target_model)
    if served is None or not served.passed:
        state = "does not list it" if served is None else "says it did not pass"
        return f"the serving report {state} ({target_model})"
    if served.sha256 != sha256:
        checked = f"sha256 {served.sha256[:16]}..." if served.sha256 else "no sha256"
        return f"the serving report checked {target_model} with {checked}, not this file's {sha256[:16]}..."
    return ""


def add_archive(
    store: ModelStoreClient,
    path: Path,
    *,
    name: str | None = None,
    source: str = "external",
    weights: str = "external",
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
    serving_report: Path | None = None,
    report_key_file: Path | None = None,
    unchecked_tensorrt: bool = False,
    step: Step | None = None,
) -> AddReport:
    """Verify an archive built elsewhere, publish it, and with `name` record it in the current manifest.

    The file is copied once into a private directory; the hash, every check and the upload read that copy.
    A TensorRT plan's `serving_report` must be signed with the key in `report_key_file`.
    """
    check_archive_name(path, name)
    if not path.is_file():
        raise PublishError(f"{path}: no such archive file")
    with private_directory("add-") as private:
        copy = private_copy(path, private)
        return _add_checked(
            store, path, copy, name=name, source=source, weights=weights,
            max_unpacked_bytes=max_unpacked_bytes, allow_fields=allow_fields, serving_report=serving_report,
            report_key_file=report_key_file, unchecked_tensorrt=unchecked_tensorrt, step=step or no_step,
        )  # fmt: skip


def _add_checked(
    store: ModelStoreClient,
    path: Path,
    copy: Path,
    *,
    name: str | None,
    source: str,
    weights: str,
    max_unpacked_bytes: int,
    allow_fields: frozenset[str],
    serving_report: Path | None,
    report_key_file: Path | None,
    unchecked_tensorrt: bool,
    step: Step,
) -> AddReport:
    from triton_mme.model_build.verify import verify_archive

    item = LocalObject(path=copy, key=path.name, sha256=file_sha256(copy), size=copy.stat().st_size)
    # A renamed archive must not carry another content's model, format or hash: the endpoint caches by name.
    report = verify_archive(
        copy, max_unpacked_bytes=max_unpacked_bytes, allow_fields=allow_fields, identity=True
    )
    contents = report.contents
    details = {"published_by": "add"}
    not_run = tuple(report.not_run)
    if contents.format is Format.TENSORRT:
        details |= _tensorrt_checked(path, item.sha256, serving_report, unchecked_tensorrt, report_key_file)
        not_run = ()
    # A broken live manifest stops the add before anything is uploaded.
    read_published_manifest(store)
    uploaded, skipped = publish_objects(store, store.prefixes.models, [item])
    step("uploaded")
    if name is None:
        return AddReport(tuple(report.checks), not_run, tuple(uploaded), tuple(skipped), None, None)
    record = archive_record(
        contents, name=name, sha256=item.sha256, size=item.size, source=source, weights=weights
    ).model_copy(update={"details": details})

    def with_record(live: Manifest | None) -> Manifest:
        current = live or Manifest()
        kept = tuple(r for r in current.archives if (r.name, r.format) != (record.name, record.format))
        return current.model_copy(update={"archives": (*kept, record)})

    with intent(store, path.name, ADD, refuses=REMOVE):
        step("announced")
        # A remove that finished before the announcement may have deleted it: upload it again.
        more, _ = publish_objects(store, store.prefixes.models, [item])
        uploaded += [key for key in more if key not in uploaded]
        step("checked")
        # Read, change and write the live manifest as one conditional step: a concurrent add is not lost.
        keys = update_live_manifest(store, with_record)
        step("written")
    return AddReport(tuple(report.checks), not_run, tuple(uploaded), tuple(skipped), keys[-1], record)


@dataclass(frozen=True)
class RemoveReport:
    removed_key: str
    manifest_key: str | None  # the manifest published without the archive (with force)
    dropped: tuple[str, ...]  # "<name>/<format>" entries it no longer names


def remove_archive(
    store: ModelStoreClient,
    target_model: str,
    *,
    force: bool = False,
    step: Step | None = None,
) -> RemoveReport:
    """Delete an archive; refused while the current manifest names it unless `force`, which first
    publishes a manifest without it (the manifest must stop naming it before it goes away)."""
    target = target_model.removeprefix(store.prefixes.models)
    ARCHIVE_NAME.check(target, where="TARGET_MODEL")
    key = store.prefixes.models + target
    if head(store, key) is None:
        raise PublishError(f"{store.url(key)}: no such archive")
    manifest_key: str | None = None
    dropped: tuple[str, ...] = ()

    def without_target(live: Manifest | None) -> Manifest:
        nonlocal dropped
        manifest = live or Manifest()
        dropped = tuple(f"{r.name}/{r.format}" for r in manifest.archives if r.target_model == target)
        if dropped and not force:
            raise PublishError(
                f"{store.url(key)}: the current manifest still points to it ({', '.join(dropped)}); "
                "publish a manifest without it first, or pass --force"
            )
        return manifest.model_copy(
            update={"archives": tuple(r for r in manifest.archives if r.target_model != target)}
        )

    step = step or no_step
    with intent(store, target, REMOVE, refuses=ADD):
        step("announced")
        live = read_published_manifest(store)
        if live is not None and target in live.target_models:
            # Conditional on the manifest read: a change made meanwhile is re-read and kept.
            manifest_key = update_live_manifest(store, without_target)[-1]
        step("checked")
        store.s3.delete_object(Bucket=store.bucket, Key=key)
        step("deleted")
    return RemoveReport(key, manifest_key, dropped)
