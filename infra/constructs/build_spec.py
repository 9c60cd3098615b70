"""The build runner's buildspec: install, build, measure every archive on the GPU, then publish."""

from __future__ import annotations

from typing import Any

from triton_mme.core.locations import BUILD_DIR, PERFORMANCE_FILE_NAME
from triton_mme.core.platform import NVIDIA_PIP_INDEX

# The runner runs the project's one command line from its source (core, model_build, profiler, store).
COMMAND = "python -m triton_mme"


def build_spec(*, tensorrt: bool) -> dict[str, Any]:
    """Commands read their settings from the project's environment variables (see ModelBuildRunner)."""
    install = [
        # No document states the runner's NVIDIA driver: record it in every build log.
        "nvidia-smi",
        "python -m pip install --quiet -r requirements-build.txt",
        # The image's own PyTorch exports the models: record which one, next to the driver.
        'python -c \'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)\'',
    ]
    if tensorrt:
        install.append(
            f'python -m pip install --quiet --extra-index-url {NVIDIA_PIP_INDEX} "$TENSORRT_REQUIREMENT"'
        )
    store = '--bucket "$MODEL_BUCKET" --manifest-prefix "$MANIFEST_PREFIX"'
    build = [
        f'{COMMAND} build --catalog "$MODEL_CATALOG" --out {BUILD_DIR} --triton-tag "$TRITON_IMAGE_TAG"',
        # Measuring before publishing also proves that every archive loads on this GPU.
        f"{COMMAND} profile --from {BUILD_DIR} --out {BUILD_DIR / PERFORMANCE_FILE_NAME}",
        f'{COMMAND} upload --from {BUILD_DIR} --prefix "$MODEL_PREFIX" {store}',
        f'{COMMAND} publish-performance --from {BUILD_DIR} --prefix "$MODEL_PREFIX" {store}',
    ]
    return {
        "version": "0.2",
        "env": {
            "shell": "bash",
            "variables": {"PYTHONUNBUFFERED": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        },
        "phases": {"install": {"commands": install}, "build": {"commands": build}},
    }
