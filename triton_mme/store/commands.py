"""The model store on S3: `triton-mme upload | stage-candidate | fetch-candidate | publish-report |
publish-build | fetch-cache | publish-cache | list | add | remove`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from contextlib import ExitStack
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triton_mme.arguments import (
    add_allow_field,
    add_unpacked_limit,
    non_negative_int,
    positive_int,
    report_key_file,
)
from triton_mme.core.locations import BUILD_DIR, MANIFEST_PREFIX, MODEL_PREFIX
from triton_mme.core.platform import PLATFORM
from triton_mme.core.runner_environment import FINGERPRINT_ENV, RUN_ENV, TRITON_TAG_ENV
from triton_mme.core.wording import plural

if TYPE_CHECKING:
    from triton_mme.store.location import ModelStoreClient

Handler = Callable[[argparse.Namespace], int]


def register(subparsers: Any) -> None:
    upload = subparsers.add_parser(
        "upload",
        help="publish built archives and their manifest to S3",
        description="Publish the archives and files named in <from>/manifest.json, then make the manifest "
        "the live one. Objects already present with the same sha256 are skipped; a key holding different "
        "bytes is never overwritten (nothing is uploaded then). The manifest is written last, under its own "
        "prefix, conditionally on the live one it replaces.",
    )
    _add_build_dir(upload)
    upload.add_argument(
        "--archives-only",
        action="store_true",
        help="publish the archives and companion files but not the manifest (the build runner publishes "
        "its manifest with publish-build, and the deployment makes it live)",
    )
    _add_bucket_arguments(upload)
    upload.set_defaults(handler=_upload)

    candidate = subparsers.add_parser(
        "stage-candidate",
        help="stage a build's manifest for the serving check (nothing reads it as a manifest)",
        description="Write <from>/manifest.json as <manifest-prefix>/builds/<fingerprint>/candidate-<its "
        "sha256>.json, once, after checking that every archive and file it names is in the bucket; then "
        "record its sha256 as what --shard staged in --run (builds/<fingerprint>/runs/<run>/shard-<i>.json), "
        "where that run's serving check finds it.",
    )
    _add_build_dir(candidate)
    _add_fingerprint(candidate)
    _add_run(candidate, shard="this build's shard")
    _add_bucket_arguments(candidate)
    candidate.set_defaults(handler=_stage_candidate)

    fetch = subparsers.add_parser(
        "fetch-candidate",
        help="download a staged candidate and every archive and file it names",
        description="Download the candidate --shard staged in --run, <manifest-prefix>/builds/<fingerprint>/"
        "candidate-<sha256>.json, and everything it names into <to>, checking every digest, and write "
        "<to>/manifest.json last.",
    )
    _add_fingerprint(fetch)
    _add_run(fetch, shard="the build shard whose candidate to fetch")
    fetch.add_argument("--to", type=Path, default=BUILD_DIR, help="directory to fill (default: %(default)s)")
    _add_bucket_arguments(fetch)
    fetch.set_defaults(handler=_fetch_candidate)

    report = subparsers.add_parser(
        "publish-report",
        help="publish the passing serving report of a build's manifest",
        description="Write <report> as <manifest-prefix>/<manifest sha256>.serving-report.json, once; "
        "refused unless it checked <from>/manifest.json, every archive of it, and every one passed.",
    )
    _add_build_dir(report)
    report.add_argument("--report", type=Path, help="the report (default: <from>/serving-report.json)")
    _add_bucket_arguments(report)
    report.set_defaults(handler=_publish_report)

    build = subparsers.add_parser(
        "publish-build",
        help="publish a checked build's manifest under its fingerprint (never the live one)",
        description="Write <from>/manifest.json as <manifest-prefix>/builds/<fingerprint>/manifest.json, "
        "once, after checking that every archive and file it names is in the bucket and that its passing "
        "serving report is published. The live manifest is not touched: the deployment promotes this one "
        "after the endpoint update succeeds.",
    )
    _add_build_dir(build)
    _add_fingerprint(build)
    build.add_argument(
        "--run", help=f"the build engine's run (with --shards; the runners have it as {RUN_ENV})"
    )
    build.add_argument(
        "--shards",
        type=positive_int,
        metavar="N",
        help="publish the union of the candidates build shards 0 to N-1 staged in --run instead of "
        "<from>/manifest.json, each beside its passing report (a fanned-out build)",
    )
    _add_bucket_arguments(build)
    build.set_defaults(handler=_publish_build)

    fetch_cache = subparsers.add_parser(
        "fetch-cache",
        help="put the archives earlier builds published for unchanged entries into the build directory",
        description="Look up the build cache key of every (model, format) of the catalog (or of its shard) "
        "in <manifest-prefix>build-cache/ and download each cached archive, its files and its record into "
        "<to>, every digest checked, so that `build --out <to>` reuses them. A record whose archive is gone "
        "or differs is a miss: that entry is built.",
    )
    fetch_cache.add_argument(
        "--catalog", type=Path, default=Path("models.yaml"), help="model catalog (default: %(default)s)"
    )
    _add_shard_arguments(fetch_cache)
    fetch_cache.add_argument(
        "--triton-tag",
        default=os.environ.get(TRITON_TAG_ENV) or PLATFORM.images.default_tag.value,
        help=f"the build's --triton-tag (part of a TensorRT plan's key; default: ${TRITON_TAG_ENV}, else "
        "%(default)s)",
    )
    fetch_cache.add_argument(
        "--to", type=Path, default=BUILD_DIR, help="build directory (default: %(default)s)"
    )
    _add_bucket_arguments(fetch_cache)
    fetch_cache.set_defaults(handler=_fetch_cache)

    publish_cache = subparsers.add_parser(
        "publish-cache",
        help="publish the build cache records of a build's published archives",
        description="Write <manifest-prefix>build-cache/<key>.json for every archive of <from>/manifest.json "
        "whose archive and files are in the bucket (after `upload --archives-only`), once each.",
    )
    _add_build_dir(publish_cache)
    _add_bucket_arguments(publish_cache)
    publish_cache.set_defaults(handler=_publish_cache)

    listing = subparsers.add_parser(
        "list",
        help="list the archives in the bucket with the current manifest's names",
        description="List archives under the model prefix with their size and the model/format the "
        "current manifest gives them; archives the manifest does not name are marked.",
    )
    _add_bucket_arguments(listing)
    listing.set_defaults(handler=_list)

    add = subparsers.add_parser(
        "add",
        help="verify and publish an archive built elsewhere",
        description="Verify an archive's layout and config.pbtxt, then publish it under its file name. "
        "With --name the current manifest gains (or replaces) the entry for that model and format.",
    )
    add.add_argument("archive", type=Path, metavar="ARCHIVE", help="a <name>.tar.gz model archive")
    add.add_argument("--name", help="logical model name to record in the manifest")
    add.add_argument("--source", default="external", help="where the model came from (default: %(default)s)")
    add.add_argument("--weights", default="external", help="which weights it carries (default: %(default)s)")
    add_unpacked_limit(add)
    add_allow_field(add)
    add.add_argument(
        "--serving-report",
        type=Path,
        metavar="FILE",
        help="a serving report in which this very file passed, written and signed by serving-check on this "
        "machine: required for a TensorRT plan",
    )
    add.add_argument(
        "--unchecked-tensorrt",
        action="store_true",
        help="publish a TensorRT plan nobody loaded; its manifest record says it is unchecked",
    )
    _add_bucket_arguments(add)
    add.set_defaults(handler=_add)

    remove = subparsers.add_parser(
        "remove",
        help="delete an archive from the bucket",
        description="Delete an archive. Refused while the current manifest points to it, unless --force, "
        "which first publishes a manifest without it.",
    )
    remove.add_argument("target_model", metavar="TARGET_MODEL", help="archive key relative to the prefix")
    remove.add_argument("--force", action="store_true", help="remove it even if the manifest names it")
    _add_bucket_arguments(remove)
    remove.set_defaults(handler=_remove)


def _add_fingerprint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fingerprint",
        required=True,
        help=f"the build's fingerprint (64 hex digits; the runners have it as {FINGERPRINT_ENV})",
    )


def _add_run(parser: argparse.ArgumentParser, *, shard: str) -> None:
    parser.add_argument(
        "--run", required=True, help=f"the build engine's run (the runners have it as {RUN_ENV})"
    )
    parser.add_argument(
        "--shard", type=non_negative_int, default=0, metavar="INDEX", help=f"{shard} (default: %(default)s)"
    )


def _add_shard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard",
        type=non_negative_int,
        metavar="INDEX",
        help="only the models of this shard of --shard-file",
    )
    parser.add_argument(
        "--shard-file",
        type=Path,
        metavar="FILE",
        help="the shards' model names (shards.json, as synthesis writes it)",
    )


def _add_build_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=BUILD_DIR,
        metavar="DIR",
        help="build output directory holding the archives and manifest.json (default: %(default)s)",
    )


def _add_bucket_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bucket", required=True, help="the model store bucket")
    parser.add_argument(
        "--prefix",
        default=MODEL_PREFIX,
        help="key prefix the endpoint loads models from (default: %(default)s)",
    )
    parser.add_argument(
        "--manifest-prefix",
        default=MANIFEST_PREFIX,
        help="key prefix of the published manifest (default: %(default)s)",
    )


def _s3_command(command: Callable[[argparse.Namespace, ModelStoreClient], int]) -> Handler:
    """Give the command the store (an S3 client, --bucket, --prefix and --manifest-prefix), and turn S3's
    errors into one line naming the bucket."""

    @wraps(command)
    def handler(args: argparse.Namespace) -> int:
        import boto3
        from boto3.exceptions import Boto3Error
        from botocore.exceptions import BotoCoreError, ClientError

        from triton_mme.core.errors import describe_aws_error, first_line
        from triton_mme.store.location import ModelStoreClient
        from triton_mme.store.publish import PublishError

        try:
            store = ModelStoreClient.at(
                boto3.client("s3"), args.bucket, models=args.prefix, manifests=args.manifest_prefix
            )
            return command(args, store)
        except (ClientError, BotoCoreError) as error:
            raise PublishError(f"s3://{args.bucket}: {describe_aws_error(error)}") from None
        except Boto3Error as error:  # the transfer manager's S3UploadFailedError, after its retries
            raise PublishError(
                f"s3://{args.bucket}: {first_line(error)}; the manifest was not changed"
            ) from None

    return handler


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _progress_bars(stack: ExitStack) -> Callable[[str, int], Callable[[int], None]]:
    from tqdm import tqdm

    def start(key: str, size: int) -> Callable[[int], None]:
        bar = stack.enter_context(
            tqdm(total=size, unit="B", unit_scale=True, desc=key, leave=False, disable=None)
        )
        return bar.update

    return start


@_s3_command
def _upload(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.publish import upload_build

    with ExitStack() as bars:
        report = upload_build(
            store,
            args.source,
            progress=_progress_bars(bars),
            make_live=not args.archives_only,
        )
    for key in report.uploaded:
        print(f"uploaded s3://{args.bucket}/{key}")
    for key in report.skipped:
        print(f"skipped  s3://{args.bucket}/{key} (already published, same sha256)")
    for key in report.manifest_keys:
        print(f"manifest s3://{args.bucket}/{key}")
    return 0


@_s3_command
def _stage_candidate(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.stages import stage_candidate

    staged, _ = stage_candidate(store, args.source, args.fingerprint.strip(), args.run.strip(), args.shard)
    state = "written" if staged.written else "kept (already staged, same bytes)"
    print(f"candidate s3://{args.bucket}/{staged.key} {state}")
    return 0


@_s3_command
def _fetch_candidate(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.stages import fetch_candidate, staged_candidate

    fingerprint = args.fingerprint.strip()
    digest = staged_candidate(store, fingerprint, args.run.strip(), args.shard)
    manifest = fetch_candidate(store, fingerprint, digest, args.to)
    fetched = f"{plural(len(manifest.archives), 'archive')} and {plural(len(manifest.files), 'file')}"
    print(f"fetched {fetched} into {args.to}")
    return 0


@_s3_command
def _publish_report(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.core.serving_report import SERVING_REPORT_FILE_NAME
    from triton_mme.store.stages import publish_serving_report

    path = args.report or args.source / SERVING_REPORT_FILE_NAME
    published = publish_serving_report(store, args.source, path)
    state = "written" if published.written else "kept (an earlier passing report of this manifest)"
    print(f"report   s3://{args.bucket}/{published.key} {state}")
    return 0


@_s3_command
def _publish_build(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.publish import read_local_manifest
    from triton_mme.store.stages import publish_checked_build, publish_checked_shards

    fingerprint = args.fingerprint.strip()
    if args.shards is not None:
        report = publish_checked_shards(store, fingerprint, (args.run or "").strip(), args.shards)
    else:
        report = publish_checked_build(store, read_local_manifest(args.source), fingerprint)
    state = "written" if report.written else "kept (already published for this fingerprint)"
    print(f"build manifest s3://{args.bucket}/{report.key} {state}")
    return 0


@_s3_command
def _fetch_cache(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.catalog import load_catalog
    from triton_mme.catalog.shards import catalog_shard
    from triton_mme.model_build.pipeline import catalog_cache_keys
    from triton_mme.store.build_cache import fetch_cached

    catalog = catalog_shard(load_catalog(args.catalog), args.shard_file, args.shard)
    found = fetch_cached(store, catalog_cache_keys(catalog, triton_tag=args.triton_tag), args.to)
    for archive, reason in sorted(found.unusable.items()):
        print(f"rebuild  {archive}: {reason}")
    total = len(found.hits) + len(found.misses)
    print(f"build cache: {len(found.hits)} of {plural(total, 'archive')} from s3://{args.bucket}, "
          f"{len(found.misses)} to build")  # fmt: skip
    return 0


@_s3_command
def _publish_cache(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.build_cache import publish_cached

    published = publish_cached(store, args.source)
    print(f"build cache: {len(published.written)} records written, {len(published.kept)} already there")
    return 0


@_s3_command
def _list(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.operations import list_store

    prefixes = store.prefixes
    listing = list_store(store)
    rows = [("TARGET_MODEL", "SIZE", "MODEL", "FORMAT")]
    for archive in listing.archives:
        model, fmt = (
            (archive.record.name, archive.record.format) if archive.record else ("(not in manifest)", "-")
        )
        rows.append(
            (archive.target_model, "MISSING" if archive.size is None else _human(archive.size), model, fmt)
        )
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        )
    in_bucket = sum(1 for a in listing.archives if a.size is not None)
    published = f"s3://{args.bucket}/{prefixes.manifests}manifest.json"
    summary = f"{in_bucket} archives under s3://{args.bucket}/{prefixes.models}; manifest {published}: "
    print(summary + (f"{listing.manifest_entries} entries" if listing.manifest_entries else "none published"))
    if listing.missing:
        from triton_mme.store.publish import PublishError

        raise PublishError(f"the manifest names {len(listing.missing)} archives missing from the bucket")
    return 0


@_s3_command
def _add(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.operations import add_archive

    report = add_archive(
        store,
        args.archive,
        name=args.name,
        source=args.source,
        weights=args.weights,
        max_unpacked_bytes=args.max_unpacked_bytes,
        allow_fields=frozenset(args.allow_field),
        serving_report=args.serving_report,
        report_key_file=report_key_file(),
        unchecked_tensorrt=args.unchecked_tensorrt,
    )
    print(f"verified {args.archive.name}: {', '.join(report.checks)}")
    for check in report.not_run:
        print(f"not run  {check}")
    for key in report.uploaded:
        print(f"uploaded s3://{args.bucket}/{key}")
    for key in report.skipped:
        print(f"skipped  s3://{args.bucket}/{key} (already published, same sha256)")
    if report.record is not None:
        mapping = f"{report.record.name}/{report.record.format} -> {report.record.target_model}"
        print(f"manifest s3://{args.bucket}/{report.manifest_key} now maps {mapping}")
    return 0


@_s3_command
def _remove(args: argparse.Namespace, store: ModelStoreClient) -> int:
    from triton_mme.store.operations import remove_archive

    report = remove_archive(store, args.target_model, force=args.force)
    if report.manifest_key is not None:
        print(
            f"manifest s3://{args.bucket}/{report.manifest_key} no longer names {', '.join(report.dropped)}"
        )
    print(f"removed  s3://{args.bucket}/{report.removed_key}")
    return 0
