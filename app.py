#!/usr/bin/env python3
"""CDK entry point and `make preflight`: the only place that reads context, environment and files.

`cdk` runs `python app.py` to synthesize. `python app.py preflight [-c key=value ...]` checks the AWS account
for the same settings, read from the same context (cdk.json, cdk.context.json, then `-c` pairs), without
changing anything. Bad settings or a bad model catalog stop either in one line on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# jsii prints a multi-line banner on stderr for Node versions it no longer tests; keep errors one line.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.core.errors import printable
from triton_mme_cdk.composition import compose
from triton_mme_cdk.context import project_context, settings_from
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.stale_assets import remove_stale_assets

PROJECT_ROOT = Path(__file__).resolve().parent


def read_settings(app: cdk.App) -> Settings:
    """The settings of the context `cdk` resolved (cdk.json, cdk.context.json, `-c`), as the App sees it."""
    return settings_from(app.node.get_all_context())


def main(app: cdk.App | None = None) -> int:
    """Synthesize the app (the CLI passes context and output directory through the environment)."""
    # No construct stack traces in the metadata: a synthesis note prints as its own line, not a JS frame.
    app = app or cdk.App(stack_traces=False)
    try:
        # The composition validates the catalog, its sources and the build target before anything is deployed.
        compose(app, read_settings(app))
    except (SettingsError, CatalogError) as error:
        print(f"error: {printable(error)}", file=sys.stderr)
        return 1
    assembly = app.synth()
    # cdk.out would otherwise keep the assets of every earlier synthesis (a copy of the checkpoints each).
    remove_stale_assets(Path(assembly.directory))
    return 0


def preflight(argv: Sequence[str], session: Any = None) -> int:
    """Run the read-only preflight checks; exit status 1 when any fails."""
    import boto3
    from botocore.exceptions import BotoCoreError, NoCredentialsError

    from triton_mme_cdk.preflight import PreflightClients, run_preflight

    parser = argparse.ArgumentParser(prog="make preflight", description=preflight.__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        settings = settings_from(project_context(args.context, PROJECT_ROOT))
    except SettingsError as error:
        print(f"error: {printable(error)}", file=sys.stderr)
        return 1
    session = session or boto3.Session(region_name=settings.region)
    region = settings.region or session.region_name
    if not region:
        print(
            "error: no region; set region in cdk.json (or -c region=...) or AWS_DEFAULT_REGION",
            file=sys.stderr,
        )
        return 1
    try:
        catalog = load_catalog(PROJECT_ROOT / settings.model_catalog)
    except CatalogError as error:
        print(f"error: {printable(error)}", file=sys.stderr)
        return 1
    try:
        results = run_preflight(settings, region, PreflightClients.from_session(session), catalog)
    except NoCredentialsError:
        print("error: no AWS credentials; see docs/first-deploy.md", file=sys.stderr)
        return 1
    except BotoCoreError as error:
        print(f"error: AWS: {printable(error)}", file=sys.stderr)
        return 1
    for result in results:
        print(printable(result.line()))
    failed = [result for result in results if not result.ok]
    print(f"preflight {region}: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["preflight"]:
        sys.exit(preflight(sys.argv[2:]))
    sys.exit(main())
