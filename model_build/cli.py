"""`python -m model_build`: build, verify, and (from model_build.store_cli) publish model archives."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from model_build.catalog import CatalogError, Format, Weights, load_catalog

TRITON_TAG_ENV = "TRITON_IMAGE_TAG"
CDK_CONTEXT_FILE = Path("cdk.json")
FALLBACK_TRITON_TAG = "25.04-py3"
# Command modules that register their own sub-commands when present.
COMMAND_MODULES = ("model_build.store_cli", "model_build.profile_cli")


def default_triton_tag() -> str:
    """$TRITON_IMAGE_TAG, else cdk.json's context tritonImageTag (the deployed image), else 25.04-py3."""
    if os.environ.get(TRITON_TAG_ENV):
        return os.environ[TRITON_TAG_ENV]
    try:
        context = json.loads(CDK_CONTEXT_FILE.read_text(encoding="utf-8")).get("context", {})
    except (OSError, ValueError):
        return FALLBACK_TRITON_TAG
    return str(context.get("tritonImageTag") or FALLBACK_TRITON_TAG)


def _build(args: argparse.Namespace) -> int:
    from model_build.build import build_catalog

    catalog = load_catalog(args.catalog)
    manifest = build_catalog(
        catalog,
        args.out,
        only=args.only,
        weights_override=Weights(args.weights) if args.weights else None,
        skip_formats=[Format(f) for f in args.skip_format],
        triton_tag=args.triton_tag,
        progress=not args.no_progress,
    )
    print(f"{len(manifest.archives)} archives in {args.out}; manifest: {Path(args.out) / 'manifest.json'}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from model_build.archive import verify_archive

    for path in args.archives:
        report = verify_archive(path)
        line = f"{Path(path).name}: OK ({', '.join(report.checks)})"
        if report.not_run:
            line += f"; not run: {'; '.join(report.not_run)}"
        print(line)
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m model_build",
        description="Export, verify and package Triton model archives from the model catalog (models.yaml).",
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = commands.add_parser(
        "build",
        help="export, verify and package every (model, format) of the catalog",
        description="Build one <name>-<format>-<content hash>.tar.gz per (model, format) and then "
        "manifest.json. Each export is checked against PyTorch at batch 1 and max_batch_size before it "
        "is packaged; a failed check leaves no archive. Unchanged entries are reused from <out>/.cache.",
    )
    build.add_argument(
        "--catalog", type=Path, default=Path("models.yaml"), help="model catalog (default: %(default)s)"
    )
    build.add_argument(
        "--out", type=Path, default=Path("build/models"), help="output directory (default: %(default)s)"
    )
    build.add_argument("--only", metavar="NAME", help="build only the catalog model with this name")
    build.add_argument(
        "--weights",
        choices=[w.value for w in Weights],
        help="override every entry's weights; 'random' builds offline from a fixed seed",
    )
    build.add_argument(
        "--skip-format",
        action="append",
        default=[],
        choices=[f.value for f in Format],
        help="do not build this format (repeatable); e.g. tensorrt on a machine without GPU or TensorRT",
    )
    build.add_argument(
        "--triton-tag",
        default=default_triton_tag(),
        help=f"serving Triton image tag the TensorRT plans must match (default: ${TRITON_TAG_ENV}, "
        "else cdk.json context tritonImageTag, else 25.04-py3; now %(default)s)",
    )
    build.add_argument(
        "--no-progress", action="store_true", help="no progress bars (one line per archive remains)"
    )
    build.set_defaults(handler=_build)
    verify = commands.add_parser(
        "verify",
        help="re-check built archives (layout, config.pbtxt, a real run for ONNX and TorchScript)",
        description="Check each archive's layout and config.pbtxt against Triton's schema and run ONNX and "
        "TorchScript models at batch 1 and max_batch_size, comparing outputs with the config.",
    )
    verify.add_argument("archives", nargs="+", type=Path, metavar="ARCHIVE", help=".tar.gz archive to check")
    verify.set_defaults(handler=_verify)
    for module_name in COMMAND_MODULES:
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).register(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from model_build.archive import ArchiveError
    from model_build.build import BuildError
    from model_build.exporters import ExportError

    try:
        return int(args.handler(args))
    except (CatalogError, ArchiveError, BuildError, ExportError) as error:
        print(f"error: {error}", file=sys.stderr)
    except OSError as error:
        print(
            f"error: {error.filename or ''}: {error.strerror or error}".replace(": : ", ": "), file=sys.stderr
        )
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 1
