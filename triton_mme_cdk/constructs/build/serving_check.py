"""The serving check stage: a GpuRunner in the endpoint's own Triton image that checks a build's archives
and publishes its manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme.core.platform import (
    PLATFORM,
    runs_serving_check,
    triton_image,
)
from triton_mme_cdk.constructs.build.build_spec import TRITON_TAG_VARIABLE, store_variables
from triton_mme_cdk.constructs.build.gpu_runner import GpuRunner, GpuRunnerProps
from triton_mme_cdk.constructs.build.serving_check_spec import serving_check_spec
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.runner_files import shipped_files
from triton_mme_cdk.settings import BuildRunnerSettings

# What the stage runs (`python3 -m triton_mme cuda-check | fetch-candidate | serving-check | publish-report |
# publish-build`): the entry point, the shared core, archive inspection, the client's payload helpers, the
# serving check and the store. Not model_build (no PyTorch in the image), not the local Triton.
SOURCE_FILES = (
    "triton_mme/__init__.py",
    "triton_mme/__main__.py",
    "triton_mme/cli.py",
    "triton_mme/arguments.py",
    "triton_mme/core",
    "triton_mme/archive_inspection",
    "triton_mme/client",
    "triton_mme/serving_check",
    "triton_mme/store",
    "requirements-check.txt",
    "requirements-uv.txt",
)


class ServingCheckRunner(GpuRunner):
    """A second GPU CodeBuild project whose build image is the endpoint's own `sagemaker-tritonserver:<tag>`
    (the same registry mapping as the endpoint, TritonImage): it fetches a build's candidate manifest and its
    files, loads every archive in that image's Triton as a multi-model endpoint does, and publishes the
    report and then the build's manifest only when every archive passed (serving_check_spec.py).

    Its role may read the store's models and manifests and write only serving reports and build manifests
    (never the live manifest, never an archive); `role_policy` holds those grants. `fingerprint` covers the
    build's and this stage's inputs: a changed check runs both stages again, since the build's manifest is
    published only by a check.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        image: TritonImage,
        runner: BuildRunnerSettings,
        build_fingerprint: str,
        container_environment: dict[str, str],
        encryption_key: kms.IKey | None = None,
        source_root: Path | None = None,
        shards: int = 1,
    ) -> None:
        spec = serving_check_spec(
            image_python_runs_check=runs_serving_check(triton_image(image.tag)), shards=shards
        )
        # The endpoint's container environment, so `serve` starts Triton with the endpoint's settings.
        variables = {
            **container_environment,
            **store_variables(store),
            TRITON_TAG_VARIABLE: image.tag,
        }
        super().__init__(
            scope,
            construct_id,
            GpuRunnerProps(
                description="Checks every archive of a build in the endpoint's Triton image on a GPU, then "
                "publishes the build's manifest",
                # The image's registry account from the endpoint's mapping; CDK grants the pull.
                build_image=codebuild.LinuxGpuBuildImage.aws_deep_learning_containers_image(
                    PLATFORM.images.repository.value, image.tag, image.registry_account
                ),
                runner=runner,
                files=shipped_files(SOURCE_FILES, root=source_root),
                build_spec=spec,
                environment=variables,
                timeout_minutes=runner.serving_check_timeout_minutes,
                encryption_key=encryption_key,
                # One task per build shard, and the task that publishes their union.
                batch_tasks=shards + 1 if shards > 1 else 1,
                batch_timeout_minutes=runner.check_stage_minutes,
            ),
        )
        # Written once each, after the check: the report, then the build's manifest; read: the candidate,
        # its archives and files, and an earlier report or manifest of the same build.
        store.grant_publish_builds(self.project)
        store.grant_read(self.project)
        self.acknowledge(
            [*store.build_write_arns, *store.read_arns],
            reason="Reads are confined to the model and manifest prefixes of the model store; writes to "
            "serving reports and build manifests there.",
            image_reason="The check must run in the endpoint's own sagemaker-tritonserver image, which is "
            "not a CodeBuild managed image.",
        )
        inputs = [build_fingerprint, self.source.asset_hash, runner.compute_type, image.tag, spec]
        inputs.append({**variables, "MODEL_BUCKET": ""})
        self.fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
