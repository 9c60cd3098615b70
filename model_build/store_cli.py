"""The model store commands: `upload`, `list`, `add` and `remove` archives in the endpoint's bucket.

`register(subparsers)` adds them to the `python -m model_build` command line; each handler is set
as the sub-parser's `handler` default, takes the parsed arguments and returns an exit status.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from model_build.archive import ArchiveContents, ArchiveError, read_archive, verify_archive
from model_build.catalog import MODEL_NAME_PATTERN
from model_build.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from model_build.naming import ARCHIVE_NAME_PATTERN, ARCHIVE_SUFFIX, CONTENT_HASH_LENGTH
from model_build.upload import (
    DEFAULT_MANIFEST_PREFIX,
    DEFAULT_MODEL_PREFIX,
    LocalObject,
    PublishError,
    S3Client,
    check_prefixes,
    file_sha256,
    head,
    normalise_prefix,
    publish_manifest,
    publish_objects,
    read_published_manifest,
    upload_build,
)

Handler = Callable[[argparse.Namespace], int]


def register(subparsers: Any) -> None:
    """Add `upload`, `list`, `add` and `remove` to an argparse sub-parsers action."""
    upload = subparsers.add_parser(
        "upload",
        help="publish built archives and their manifest to S3",
        description="Publish the archives named in <from>/manifest.json, then the manifest itself. "
        "Objects already present with the same sha256 are skipped; a key holding different bytes is "
        "never overwritten (nothing is uploaded then). The manifest is written last, under its own prefix.",
    )
    upload.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=Path("build/models"),
        metavar="DIR",
        help="build output directory holding the archives and manifest.json (default: %(default)s)",
    )
    _add_bucket_arguments(upload)
    upload.set_defaults(handler=_upload)

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


def _add_bucket_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bucket", required=True, help="the model store bucket")
    parser.add_argument(
        "--prefix",
        default=DEFAULT_MODEL_PREFIX,
        help="key prefix the endpoint loads models from (default: %(default)s)",
    )
    parser.add_argument(
        "--manifest-prefix",
        default=DEFAULT_MANIFEST_PREFIX,
        help="key prefix of the published manifest (default: %(default)s)",
    )


def s3_client() -> S3Client:
    return boto3.client("s3")


def _one_line_errors(command: Callable[[argparse.Namespace, S3Client], int]) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        try:
            return command(args, s3_client())
        except PublishError as error:
            print(f"error: {error}", file=sys.stderr)
        except ClientError as error:
            details = error.response.get("Error", {})
            print(
                f"error: s3://{args.bucket}: {details.get('Code')}: {details.get('Message')}", file=sys.stderr
            )
        except BotoCoreError as error:
            print(f"error: s3://{args.bucket}: {error}", file=sys.stderr)
        return 1

    return handler


def _prefixes(args: argparse.Namespace) -> tuple[str, str]:
    model_prefix, manifest_prefix = normalise_prefix(args.prefix), normalise_prefix(args.manifest_prefix)
    check_prefixes(model_prefix, manifest_prefix)
    return model_prefix, manifest_prefix


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


@_one_line_errors
def _upload(args: argparse.Namespace, s3: S3Client) -> int:
    with ExitStack() as bars:
        report = upload_build(
            s3,
            args.source,
            args.bucket,
            prefix=args.prefix,
            manifest_prefix=args.manifest_prefix,
            progress=_progress_bars(bars),
        )
    for key in report.uploaded:
        print(f"uploaded s3://{args.bucket}/{key}")
    for key in report.skipped:
        print(f"skipped  s3://{args.bucket}/{key} (already published, same sha256)")
    for key in report.manifest_keys:
        print(f"manifest s3://{args.bucket}/{key}")
    return 0


def _list_objects(s3: S3Client, bucket: str, prefix: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        objects.extend(page.get("Contents", []))
    return objects


@_one_line_errors
def _list(args: argparse.Namespace, s3: S3Client) -> int:
    model_prefix, manifest_prefix = _prefixes(args)
    manifest = read_published_manifest(s3, args.bucket, manifest_prefix) or Manifest()
    records = {record.target_model: record for record in manifest.archives}
    objects = _list_objects(s3, args.bucket, model_prefix)
    rows = [("TARGET_MODEL", "SIZE", "MODEL", "FORMAT")]
    present = set()
    for item in sorted(objects, key=lambda o: o["Key"]):
        key = item["Key"].removeprefix(model_prefix)
        present.add(key)
        record = records.get(key)
        model, fmt = (record.name, record.format) if record else ("(not in manifest)", "-")
        rows.append((key, _human(item["Size"]), model, fmt))
    missing = sorted(set(records) - present)
    for key in missing:
        rows.append((key, "MISSING", records[key].name, records[key].format))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        )
    published = f"s3://{args.bucket}/{manifest_prefix}{MANIFEST_FILE_NAME}"
    summary = f"{len(objects)} archives under s3://{args.bucket}/{model_prefix}; manifest {published}: "
    print(summary + (f"{len(records)} entries" if manifest.archives else "none published"))
    if missing:
        print(f"error: the manifest names {len(missing)} archives missing from the bucket", file=sys.stderr)
        return 1
    return 0


@_one_line_errors
def _remove(args: argparse.Namespace, s3: S3Client) -> int:
    model_prefix, manifest_prefix = _prefixes(args)
    target = args.target_model.removeprefix(model_prefix)
    key = model_prefix + target
    if head(s3, args.bucket, key) is None:
        raise PublishError(f"s3://{args.bucket}/{key}: no such archive")
    manifest = read_published_manifest(s3, args.bucket, manifest_prefix)
    if manifest is not None and target in manifest.target_models:
        users = ", ".join(f"{r.name}/{r.format}" for r in manifest.archives if r.target_model == target)
        if not args.force:
            raise PublishError(
                f"s3://{args.bucket}/{key}: the current manifest still points to it ({users}); "
                "publish a manifest without it first, or pass --force"
            )
        # The manifest must stop naming the archive before the archive goes away.
        remaining = tuple(r for r in manifest.archives if r.target_model != target)
        keys = publish_manifest(
            s3,
            args.bucket,
            manifest.model_copy(update={"archives": remaining}),
            model_prefix=model_prefix,
            manifest_prefix=manifest_prefix,
        )
        print(f"manifest s3://{args.bucket}/{keys[-1]} no longer names {users}")
    s3.delete_object(Bucket=args.bucket, Key=key)
    print(f"removed  s3://{args.bucket}/{key}")
    return 0


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


def _check_archive_name(path: Path, sha256: str, logical_name: str | None) -> None:
    if not path.name.endswith(ARCHIVE_SUFFIX):
        raise PublishError(
            f"{path}: an archive must be a <name>{ARCHIVE_SUFFIX} file (its name becomes the TargetModel)"
        )
    named = ARCHIVE_NAME_PATTERN.match(path.name)
    # A renamed archive must not carry another content's hash: the endpoint caches by name.
    if named and not sha256.startswith(named["digest"]):
        raise PublishError(
            f"{path}: the name claims content hash {named['digest']} but the file's sha256 starts with "
            f"{sha256[:CONTENT_HASH_LENGTH]}"
        )
    if logical_name is not None and not re.match(MODEL_NAME_PATTERN, logical_name):
        raise PublishError(
            f"--name '{logical_name}': lowercase letters, digits and hyphens, starting and ending with a "
            "letter or digit, at most 50 characters"
        )


@_one_line_errors
def _add(args: argparse.Namespace, s3: S3Client) -> int:
    model_prefix, manifest_prefix = _prefixes(args)
    path: Path = args.archive
    if not path.is_file():
        raise PublishError(f"{path}: no such archive file")
    item = LocalObject(path=path, key=path.name, sha256=file_sha256(path), size=path.stat().st_size)
    _check_archive_name(path, item.sha256, args.name)
    try:
        contents = read_archive(path)
        report = verify_archive(path)
    except ArchiveError as error:
        raise PublishError(str(error)) from None
    print(f"verified {path.name}: {', '.join(report.checks)}")
    for check in report.not_run:
        print(f"not run  {check}")
    uploaded, skipped = publish_objects(s3, args.bucket, model_prefix, [item])
    for key in uploaded:
        print(f"uploaded s3://{args.bucket}/{key}")
    for key in skipped:
        print(f"skipped  s3://{args.bucket}/{key} (already published, same sha256)")
    if args.name is None:
        return 0
    record = archive_record(
        contents, name=args.name, sha256=item.sha256, size=item.size, source=args.source, weights=args.weights
    )
    current = read_published_manifest(s3, args.bucket, manifest_prefix) or Manifest()
    kept = tuple(r for r in current.archives if (r.name, r.format) != (record.name, record.format))
    keys = publish_manifest(
        s3,
        args.bucket,
        current.model_copy(update={"archives": (*kept, record)}),
        model_prefix=model_prefix,
        manifest_prefix=manifest_prefix,
    )
    mapping = f"{record.name}/{record.format} -> {record.target_model}"
    print(f"manifest s3://{args.bucket}/{keys[-1]} now maps {mapping}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the store commands on their own (`python -m model_build.store_cli ...`)."""
    parser = argparse.ArgumentParser(prog="python -m model_build.store_cli", description=__doc__)
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
