"""The build runner's buildspec: set up and check CUDA, install, build, upload, stage the candidate manifest.

The build stage starts from what earlier runners built of unchanged entries (`fetch-cache`, the store's
build cache) and publishes in the order that never leaves a manifest or cache record naming something
missing: the archives and companion files (golden data included), their build cache records, then its
manifest as a candidate under its fingerprint, which nothing reads as a manifest, recorded as what this shard
staged in this run (store.stages) for the serving check stage (serving_check_spec.py), which checks every
archive in the endpoint's own image and only then publishes the build's manifest. Neither
stage writes the live manifest: the deployment promotes the build's manifest once the endpoint serves it
(docs/updates.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from triton_mme.catalog.shards import SHARDS_FILE_NAME
from triton_mme.core.locations import BUILD_DIR
from triton_mme.core.platform import PLATFORM
from triton_mme.core.runner_environment import FINGERPRINT_ENV, RUN_ENV, TRITON_TAG_ENV

if TYPE_CHECKING:
    from triton_mme_cdk.constructs.store.model_store import ModelStore

# The runner runs the project's one command line from its source (core, sizing, model_build, store).
COMMAND = "python -m triton_mme"
# Set by the build state machine on every build it starts (build_state_machine.py imports them): the build's
# fingerprint and the engine's run (its execution's name), which together find each shard's candidate.
FINGERPRINT_VARIABLE = FINGERPRINT_ENV
RUN_VARIABLE = RUN_ENV
# Set on both stages' projects: the Triton image tag the archives are built for and checked in (the command
# line's --triton-tag default reads the same variable).
TRITON_TAG_VARIABLE = TRITON_TAG_ENV
# A fanned-out stage (buildRunners > 1): each shard's index in the batch (its task's own variable), and the
# shard file synthesis writes beside the catalog (catalog.shards).
SHARD_VARIABLE = "BUILD_SHARD"
SHARD_TASK_PREFIX = "shard_"


def shard_tasks(shards: int) -> list[dict[str, Any]]:
    """One batch task per shard, `shard_<i>`, each with its index in SHARD_VARIABLE."""
    return [
        {"identifier": f"{SHARD_TASK_PREFIX}{index}", "env": {"variables": {SHARD_VARIABLE: str(index)}}}
        for index in range(shards)
    ]


# What the images' entry points do (the Deep Learning Containers' start_cuda_compat.sh, NGC's
# nvidia_entrypoint.sh in the Triton image), which CodeBuild skips because it ignores ENTRYPOINT: when the
# host driver is older than the image's CUDA forward-compatibility libraries, put those first on
# LD_LIBRARY_PATH. The libraries are in /usr/local/cuda/compat (DLC) or /usr/local/cuda/compat/lib.real
# (NGC): the first that holds libcuda.so.1 is used. Buildspec 0.2 runs every command in one shell, so the
# export reaches the build phase. Prints the driver either way.
_COMPAT_CANDIDATES = " ".join(
    f'"$cuda_home/{directory}"' for directory in PLATFORM.codebuild.cuda_compat_directories.value
)
CUDA_COMPAT_SETUP = (
    'cuda_home="${CUDA_HOME:-/usr/local/cuda}"; compat=""; '
    f"for candidate in {_COMPAT_CANDIDATES}; do "
    'if [ -f "$candidate/libcuda.so.1" ]; then compat="$candidate"; break; fi; done; '
    'driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader --id=0 2>/dev/null || true)"; '
    'echo "NVIDIA driver: ${driver:-not found}"; '
    'if [ -n "$driver" ] && [ -n "$compat" ]; then '
    'compat_driver="$(readlink "$compat/libcuda.so.1" | cut -d. -f3-)"; '
    'if [ "$driver" != "$compat_driver" ] '
    '&& [ "$(printf "%s\\n%s\\n" "$driver" "$compat_driver" | sort -V | head -n1)" = "$driver" ]; then '
    'export LD_LIBRARY_PATH="$compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; '
    'echo "CUDA forward compatibility: $compat (libraries for driver $compat_driver)"; '
    "fi; fi"
)


# Which build and run the stages' candidate commands serve (the variables the state machine sets).
RUN_ARGUMENTS = f'--fingerprint "${FINGERPRINT_VARIABLE}" --run "${RUN_VARIABLE}"'
# Where the store commands of both stages publish (the projects' environment variables, store_variables).
STORE_ARGUMENTS = '--prefix "$MODEL_PREFIX" --bucket "$MODEL_BUCKET" --manifest-prefix "$MANIFEST_PREFIX"'


def store_variables(store: ModelStore) -> dict[str, str]:
    """The environment variables STORE_ARGUMENTS reads: the store's bucket and prefixes."""
    return {
        "MODEL_BUCKET": store.bucket.bucket_name,
        "MODEL_PREFIX": store.model_prefix,
        "MANIFEST_PREFIX": store.manifest_prefix,
    }


def build_spec(*, tensorrt: bool, shards: int = 1) -> dict[str, Any]:
    """Commands read their settings from the project's environment variables (see ModelBuildRunner). With
    `shards` > 1 the build is a batch of that many tasks, each building its shard of the catalog
    (fast-fail: one failed shard stops the others, and the batch fails)."""
    install = [
        # No document states the runner's NVIDIA driver: record the whole table; the check below decides.
        "nvidia-smi || true",
        CUDA_COMPAT_SETUP,
        "python -m pip install --quiet -r requirements-build.txt",
        # One kernel on the GPU with the image's own PyTorch; one line and a stop when CUDA is unusable.
        f"{COMMAND} gpu-check",
    ]
    if tensorrt:
        install.append(
            "python -m pip install --quiet --extra-index-url "
            f'{PLATFORM.codebuild.nvidia_pip_index.value} "$TENSORRT_REQUIREMENT"'
        )
    store = f"--from {BUILD_DIR} {STORE_ARGUMENTS}"
    shard = f' --shard "${SHARD_VARIABLE}"' if shards > 1 else ""
    shard_file = f"{shard} --shard-file {SHARDS_FILE_NAME}" if shards > 1 else ""
    catalog = f'--catalog "$MODEL_CATALOG" --triton-tag "${TRITON_TAG_VARIABLE}"{shard_file}'
    build = [
        # What earlier runners built of unchanged entries (store.build_cache): only the rest is exported.
        f"{COMMAND} fetch-cache {catalog} --to {BUILD_DIR} {STORE_ARGUMENTS}",
        f"{COMMAND} build {catalog} --out {BUILD_DIR}",
        f"{COMMAND} upload --archives-only {store}",
        f"{COMMAND} publish-cache {store}",
        # Last: the build's manifest as a candidate for the serving check, recorded for this run and shard.
        f"{COMMAND} stage-candidate {RUN_ARGUMENTS}{shard} {store}",
    ]
    spec: dict[str, Any] = {
        "version": "0.2",
        "env": {
            "shell": "bash",
            "variables": {"PYTHONUNBUFFERED": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        },
        "phases": {"install": {"commands": install}, "build": {"commands": build}},
    }
    if shards > 1:
        spec["batch"] = {"fast-fail": True, "build-list": shard_tasks(shards)}
    return spec
