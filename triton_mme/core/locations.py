"""Where things live: the local build directory and the model store's key prefixes.

The endpoint's ModelDataUrl is `s3://<bucket>/<MODEL_PREFIX>`: every key under it is a TargetModel, so
nothing but archives is ever written there. Manifests and the files they list live under
MANIFEST_PREFIX, outside the model prefix:

- `<MANIFEST_PREFIX>builds/<fingerprint>/manifest.json`: what one build produced, written once by the build;
- `<MANIFEST_PREFIX>manifest.json`: the live pointer, the manifest the endpoint serves. The deployment
  promotes a build's manifest to it only after the endpoint update succeeded (docs/updates.md); the
  store commands `upload`, `add` and `remove` change it by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

BUILD_DIR = Path("build/models")
MODEL_PREFIX = "models/"
MANIFEST_PREFIX = "manifests/"
MANIFEST_FILE_NAME = "manifest.json"
PERFORMANCE_FILE_NAME = "performance.json"
BUILDS_FOLDER = "builds/"
# A build's fingerprint: the sha256 (hex) of all the build depends on (infra/constructs/build_runner.py).
FINGERPRINT_PATTERN = re.compile(r"^[0-9a-f]{64}$")


def live_manifest_key(manifest_prefix: str = MANIFEST_PREFIX) -> str:
    """The key of the live pointer: the manifest clients read and the endpoint serves."""
    return f"{manifest_prefix}{MANIFEST_FILE_NAME}"


def build_manifest_key(fingerprint: str, manifest_prefix: str = MANIFEST_PREFIX) -> str:
    """The key of one build's manifest; ValueError when `fingerprint` is not 64 lowercase hex digits."""
    if not FINGERPRINT_PATTERN.fullmatch(fingerprint):
        raise ValueError(
            f"fingerprint '{fingerprint}' is not a build fingerprint; allowed: 64 lowercase hex digits"
        )
    return f"{manifest_prefix}{BUILDS_FOLDER}{fingerprint}/{MANIFEST_FILE_NAME}"
