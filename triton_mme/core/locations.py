"""Where things live: the local build directory and the model store's key prefixes.

The endpoint's ModelDataUrl is `s3://<bucket>/<MODEL_PREFIX>`: every key under it is a TargetModel, so
nothing but archives is ever written there. Manifests and the files they list live under
MANIFEST_PREFIX, outside the model prefix.
"""

from __future__ import annotations

from pathlib import Path

BUILD_DIR = Path("build/models")
MODEL_PREFIX = "models/"
MANIFEST_PREFIX = "manifests/"
MANIFEST_FILE_NAME = "manifest.json"
PERFORMANCE_FILE_NAME = "performance.json"
