#!/usr/bin/env python3
"""CDK entry point: the only place that reads context, environment and files.

Bad settings or a bad model catalog stop synthesis with one line on stderr and exit status 1.
"""

from __future__ import annotations

import os
import sys

# jsii prints a multi-line banner on stderr for Node versions it no longer tests; keep errors one line.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from infra.build_target import check_build_target
from infra.composition import compose
from infra.settings import CONTEXT_KEYS, Settings, SettingsError
from triton_mme.core.catalog import CatalogError, load_catalog


def read_settings(app: cdk.App) -> Settings:
    return Settings.from_context({key: app.node.try_get_context(key) for key in CONTEXT_KEYS})


def main(app: cdk.App | None = None) -> int:
    """Synthesize the app (the CLI passes context and output directory through the environment)."""
    app = app or cdk.App()
    try:
        settings = read_settings(app)
        # The catalog is validated here so a broken catalog fails before anything is deployed.
        catalog = load_catalog(settings.model_catalog)
        check_build_target(settings, catalog)
    except (SettingsError, CatalogError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    compose(app, settings, catalog)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
