"""The serving check stage's buildspec: in the endpoint's own sagemaker-tritonserver image, set up and check
CUDA, install the check, fetch the build's candidate, check every archive, publish the report, then the
build's manifest, last.

CodeBuild ignores the image's ENTRYPOINT (NGC's nvidia_entrypoint.sh), so the CUDA forward-compatibility
set-up it would do is repeated (CUDA_COMPAT_SETUP), and `cuda-check` stops the stage in one line when the
driver cannot run the image's CUDA. The check runs with the image's own python3 where it is 3.11 or newer;
older images (Ubuntu 22.04, Python 3.10) get a uv-managed CPython 3.12 beside it, which only drives HTTP and
S3: the archives run in the image's Triton either way.
"""

from __future__ import annotations

from typing import Any

from triton_mme.core.locations import BUILD_DIR
from triton_mme.core.report_key import REPORT_KEY_ENV
from triton_mme_cdk.constructs.build.build_spec import (
    CUDA_COMPAT_SETUP,
    FINGERPRINT_VARIABLE,
    RUN_ARGUMENTS,
    SHARD_VARIABLE,
    STORE_ARGUMENTS,
    TRITON_TAG_VARIABLE,
    shard_tasks,
)

# The fanned-out check's last task, after every shard's: it publishes the union of the checked candidates.
PUBLISH_TASK = "publish"
PUBLISH_VARIABLE = "PUBLISH_SHARDS"

IMAGE_PYTHON = "python3"
# Where the uv-managed interpreter lives for images whose python3 is too old, and which CPython it is.
MANAGED_ENVIRONMENT = "/opt/serving-check"
MANAGED_PYTHON = "3.12"

# Relative to the source folder the build runs in; made on first use by the serving check.
RUNNER_REPORT_KEY_FILE = ".serving-check/report-key"


def _python_setup(image_python_runs_check: bool) -> tuple[str, list[str]]:
    """The interpreter the check runs with, and the commands that prepare it."""
    if image_python_runs_check:
        # The table's Python is inferred for some tags: a python3 older than 3.11 stops here in one line.
        guard = (
            f'{IMAGE_PYTHON} -c "import sys; sys.exit(sys.version_info < (3, 11) and '
            "'error: python3 ' + sys.version.split()[0] + ' is older than the 3.11 the check needs')\""
        )
        return IMAGE_PYTHON, [guard, f"{IMAGE_PYTHON} -m pip install --quiet -r requirements-check.txt"]
    python = f"{MANAGED_ENVIRONMENT}/bin/python"
    return python, [
        f"{IMAGE_PYTHON} -m pip install --quiet -r requirements-uv.txt",
        f"{IMAGE_PYTHON} -m uv venv --python {MANAGED_PYTHON} {MANAGED_ENVIRONMENT}",
        f"{IMAGE_PYTHON} -m uv pip install --quiet --python {python} -r requirements-check.txt",
    ]


def serving_check_spec(*, image_python_runs_check: bool, shards: int = 1) -> dict[str, Any]:
    """Commands read their settings from the project's environment variables (see ServingCheckRunner). With
    `shards` > 1 the check is a batch graph: one task per build shard checks that shard's candidate and
    publishes its report, and a last task, after all of them, publishes the build's manifest: the union of
    the candidates the build shards staged in this run, each beside its passing report (`publish-build
    --shards`)."""
    python, setup = _python_setup(image_python_runs_check)
    command = f"{python} -m triton_mme"
    install = [
        "nvidia-smi || true",
        CUDA_COMPAT_SETUP,
        *setup,
        # The driver API, as Triton will use it: one line and a stop when CUDA is unusable.
        f'{command} cuda-check --triton-tag "${TRITON_TAG_VARIABLE}"',
    ]
    shard = f' --shard "${SHARD_VARIABLE}"' if shards > 1 else ""
    build = [
        # The candidate the build stage (its shard) staged in this run of the engine (store.stages).
        f"{command} fetch-candidate {RUN_ARGUMENTS}{shard} --to {BUILD_DIR} {STORE_ARGUMENTS}",
        f"{command} serving-check --server sagemaker --from {BUILD_DIR} "
        f'--triton-tag "${TRITON_TAG_VARIABLE}"',
        f"{command} publish-report --from {BUILD_DIR} {STORE_ARGUMENTS}",
        # Last: the build's manifest, beside its passing report, under the engine's fingerprint.
        f'{command} publish-build --fingerprint "${FINGERPRINT_VARIABLE}" --from {BUILD_DIR} '
        f"{STORE_ARGUMENTS}",
    ]
    if shards > 1:
        publish = f"{command} publish-build {RUN_ARGUMENTS} --shards {shards} {STORE_ARGUMENTS}"
        # A shard's task: its candidate, checked and reported (every command but the last publish-build), each
        # after the one before succeeded, so the task fails with the first that fails.
        check = " && ".join(build[:-1])
        build = [f'if [ -n "${PUBLISH_VARIABLE}" ]; then {publish}; else {check}; fi']
    spec: dict[str, Any] = {
        "version": "0.2",
        "env": {
            "shell": "bash",
            "variables": {
                "PYTHONUNBUFFERED": "1",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                # The Triton image's python3 is the system's (PEP 668); Triton's own images set the same.
                "PIP_BREAK_SYSTEM_PACKAGES": "1",
                # The key the serving check signs its report with, in the build's own folder rather than the
                # image user's home: nothing on the runner reads the signature (the store's report is trusted
                # by its bucket), so the check must not depend on a writable home.
                REPORT_KEY_ENV: RUNNER_REPORT_KEY_FILE,
            },
        },
        "phases": {"install": {"commands": install}, "build": {"commands": build}},
    }
    if shards > 1:
        tasks = shard_tasks(shards)
        publish_task = {
            "identifier": PUBLISH_TASK,
            "depend-on": [task["identifier"] for task in tasks],
            "env": {"variables": {PUBLISH_VARIABLE: "1"}},
        }
        spec["batch"] = {"fast-fail": True, "build-graph": [*tasks, publish_task]}
    return spec
