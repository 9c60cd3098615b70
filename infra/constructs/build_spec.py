"""The build runner's buildspec: set up and check CUDA, install, build, measure every archive, publish.

Publishing goes in the order that never leaves a manifest naming something missing: the archives and
companion files, then the figures, then, last, the build's manifest under its fingerprint. A build never
writes the live manifest: the deployment promotes the build's manifest once the endpoint serves it
(docs/updates.md). A check that must pass before a build's manifest is published goes before its last step.
"""

from __future__ import annotations

from typing import Any

from triton_mme.core.locations import BUILD_DIR, PERFORMANCE_FILE_NAME
from triton_mme.core.platform import NVIDIA_PIP_INDEX

# The runner runs the project's one command line from its source (core, model_build, profiler, store).
COMMAND = "python -m triton_mme"
# Set by the build trigger on every build it starts (model_build_trigger_handler/handler.py, which cannot
# import it: it ships alone; a test checks that both name the same variable).
FINGERPRINT_VARIABLE = "MODEL_BUILD_FINGERPRINT"

# What the Deep Learning Containers image's entry point (start_cuda_compat.sh) does, which CodeBuild skips
# because it ignores ENTRYPOINT: when the host driver is older than the image's CUDA forward-compatibility
# libraries, put those first on LD_LIBRARY_PATH. Buildspec 0.2 runs every command in one shell, so the
# export reaches the build phase. Prints the driver either way.
CUDA_COMPAT_SETUP = (
    'compat="${CUDA_HOME:-/usr/local/cuda}/compat"; '
    'driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader --id=0 2>/dev/null || true)"; '
    'echo "NVIDIA driver: ${driver:-not found}"; '
    'if [ -n "$driver" ] && [ -f "$compat/libcuda.so.1" ]; then '
    'compat_driver="$(readlink "$compat/libcuda.so.1" | cut -d. -f3-)"; '
    'if [ "$driver" != "$compat_driver" ] '
    '&& [ "$(printf "%s\\n%s\\n" "$driver" "$compat_driver" | sort -V | head -n1)" = "$driver" ]; then '
    'export LD_LIBRARY_PATH="$compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; '
    'echo "CUDA forward compatibility: $compat (libraries for driver $compat_driver)"; '
    "fi; fi"
)


def build_spec(*, tensorrt: bool) -> dict[str, Any]:
    """Commands read their settings from the project's environment variables (see ModelBuildRunner)."""
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
            f'python -m pip install --quiet --extra-index-url {NVIDIA_PIP_INDEX} "$TENSORRT_REQUIREMENT"'
        )
    store = f'--from {BUILD_DIR} --prefix "$MODEL_PREFIX" --bucket "$MODEL_BUCKET"'
    store += ' --manifest-prefix "$MANIFEST_PREFIX"'
    build = [
        f'{COMMAND} build --catalog "$MODEL_CATALOG" --out {BUILD_DIR} --triton-tag "$TRITON_IMAGE_TAG"',
        # Measuring before publishing also proves that every archive loads on this GPU.
        f"{COMMAND} profile --from {BUILD_DIR} --out {BUILD_DIR / PERFORMANCE_FILE_NAME}",
        f"{COMMAND} upload --archives-only {store}",
        f"{COMMAND} publish-performance {store}",
        # Last: the manifest of this build, under the fingerprint the trigger passed.
        f'{COMMAND} publish-build --fingerprint "${FINGERPRINT_VARIABLE}" {store}',
    ]
    return {
        "version": "0.2",
        "env": {
            "shell": "bash",
            "variables": {"PYTHONUNBUFFERED": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        },
        "phases": {"install": {"commands": install}, "build": {"commands": build}},
    }
