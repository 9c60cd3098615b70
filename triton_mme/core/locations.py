"""Where things live: the local build directory and the model store's key prefixes.

The endpoint's ModelDataUrl is `s3://<bucket>/<MODEL_PREFIX>`: every key under it is a TargetModel, so
nothing but archives is ever written there. Manifests and the files they list live under
MANIFEST_PREFIX, outside the model prefix:

- `<MANIFEST_PREFIX>builds/<fingerprint>/candidate-<manifest sha256>.json`: what one build produced, staged
  by the build stage for the serving check; nothing reads it as a manifest;
- `<MANIFEST_PREFIX>builds/<fingerprint>/runs/<run>/shard-<index>.json`: which candidate shard `index` of the
  build stage staged in one run of the build engine (its execution's name), for that run's serving check;
- `<MANIFEST_PREFIX><manifest sha256>.serving-report.json`: how every archive of that manifest loaded and
  answered in the endpoint's own Triton (core.serving_report), written once by the serving check;
- `<MANIFEST_PREFIX>builds/<fingerprint>/manifest.json`: the build's manifest, written once by the serving
  check after its report, last;
- `<MANIFEST_PREFIX><manifest sha256>.index.json` and `.records.jsonl`: one manifest's per-model index and
  its records (core.manifest_index), written once, before the manifest that names them (a build's by the
  serving check, the live one's by the store commands), so a client reads one model's record, not the whole;
- `<MANIFEST_PREFIX>manifest.json`: the live pointer, the manifest the endpoint serves. The deployment
  promotes a build's manifest to it only after the endpoint update succeeded (docs/updates.md); the
  store commands `upload`, `add` and `remove` change it by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

BUILD_DIR = Path("build/models")
# Where `serve-local` writes its Triton's log: in the folder it serves (the loader reads only archive names
# there), so `triton-mme models --local FOLDER` reads the log of that folder's server and no other.
LOCAL_TRITON_LOG_NAME = "local-triton.log"


def local_triton_log(path: Path) -> Path:
    """The Triton log of a served folder (`<folder>/local-triton.log`), or `path` itself when it is a file."""
    return path / LOCAL_TRITON_LOG_NAME if path.is_dir() else path


MODEL_PREFIX = "models/"
MANIFEST_PREFIX = "manifests/"
MANIFEST_FILE_NAME = "manifest.json"
# The serving report beside a build's manifest (core.serving_report reads and writes it).
SERVING_REPORT_FILE_NAME = "serving-report.json"
SERVING_REPORT_SUFFIX = ".serving-report.json"
INDEX_SUFFIX = ".index.json"
RECORDS_SUFFIX = ".records.jsonl"
CANDIDATE_PREFIX = "candidate-"
BUILDS_FOLDER = "builds/"
RUNS_FOLDER = "runs/"
STAGED_SHARD_PREFIX = "shard-"
# Under the manifest prefix: the build cache records runners share (store.build_cache), `<key>.json` each.
BUILD_CACHE_FOLDER = "build-cache/"
# Under the manifest prefix: the operators' intents of `add`, `upload` and `remove` (store.intents). No
# runner may write here: IAM's `*` matches `/`, so the runners' write patterns under the manifest prefix
# reach it, and their roles deny it explicitly (triton_mme_cdk/constructs/model_store.py).
INTENTS_FOLDER = "intents/"
# A build's fingerprint: the sha256 (hex) of all the build depends on
# (triton_mme_cdk/constructs/build_runner.py and
# serving_check.py); a manifest's digest: the sha256 (hex) of its bytes (Manifest.sha256).
FINGERPRINT_PATTERN = re.compile(r"^[0-9a-f]{64}$")
SHA256_PATTERN = FINGERPRINT_PATTERN


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


def candidate_manifest_key(
    fingerprint: str, manifest_sha256: str, manifest_prefix: str = MANIFEST_PREFIX
) -> str:
    """Where the build stage stages its manifest for the serving check: never read as a manifest."""
    if not SHA256_PATTERN.fullmatch(manifest_sha256):
        raise ValueError(
            f"candidate '{manifest_sha256}' is not a manifest digest; allowed: 64 lowercase hex digits"
        )
    folder = build_manifest_key(fingerprint, manifest_prefix).removesuffix(MANIFEST_FILE_NAME)
    return f"{folder}{CANDIDATE_PREFIX}{manifest_sha256}.json"


# A run of the build engine: its Step Functions execution's name (at most 80 letters, digits, - and _).
RUN_PATTERN = re.compile(r"^[0-9A-Za-z_-]{1,80}$")


def staged_shard_key(fingerprint: str, run: str, shard: int, manifest_prefix: str = MANIFEST_PREFIX) -> str:
    """Where shard `shard` of run `run` records the digest of the candidate it staged (written once)."""
    if not RUN_PATTERN.fullmatch(run):
        raise ValueError(f"run '{run}' is not a build run; allowed: 1 to 80 letters, digits, - and _")
    folder = build_manifest_key(fingerprint, manifest_prefix).removesuffix(MANIFEST_FILE_NAME)
    return f"{folder}{RUNS_FOLDER}{run}/{STAGED_SHARD_PREFIX}{shard}.json"


def serving_report_key(manifest_sha256: str, manifest_prefix: str = MANIFEST_PREFIX) -> str:
    """Where the serving report of a manifest is published: named by the manifest's digest, so the report of
    whatever manifest is live (its bytes are the build manifest's) is found from its sha256."""
    if not SHA256_PATTERN.fullmatch(manifest_sha256):
        raise ValueError(f"'{manifest_sha256}' is not a manifest digest; allowed: 64 lowercase hex digits")
    return f"{manifest_prefix}{manifest_sha256}{SERVING_REPORT_SUFFIX}"


def manifest_index_keys(manifest_sha256: str, manifest_prefix: str = MANIFEST_PREFIX) -> tuple[str, str]:
    """Where a manifest's index and records are published (core.manifest_index), named by its digest."""
    if not SHA256_PATTERN.fullmatch(manifest_sha256):
        raise ValueError(f"'{manifest_sha256}' is not a manifest digest; allowed: 64 lowercase hex digits")
    stem = f"{manifest_prefix}{manifest_sha256}"
    return f"{stem}{INDEX_SUFFIX}", f"{stem}{RECORDS_SUFFIX}"


_BUILD_MANIFEST_KEY = re.compile(rf"(?P<prefix>(?:.*/)?){BUILDS_FOLDER}[0-9a-f]{{64}}/[^/]+")


def manifest_prefix_of(manifest_key: str) -> str:
    """The manifest prefix a manifest's key lies under: `a/manifests/` for `a/manifests/manifest.json` and for
    a build's `a/manifests/builds/<fingerprint>/manifest.json`; the key's folder for any other key."""
    build = _BUILD_MANIFEST_KEY.fullmatch(manifest_key)
    if build:
        return build["prefix"]
    folder, slash, _ = manifest_key.rpartition("/")
    return folder + slash
