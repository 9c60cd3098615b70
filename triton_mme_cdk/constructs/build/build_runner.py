"""The model build stage: a GpuRunner that builds the catalog and stages its manifest as a candidate."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme.catalog.shards import SHARDS_FILE_NAME, shards_json
from triton_mme.core.platform import build_image, triton_image
from triton_mme_cdk.constructs.build.build_spec import TRITON_TAG_VARIABLE, build_spec, store_variables
from triton_mme_cdk.constructs.build.gpu_runner import GpuRunner, GpuRunnerProps
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.runner_files import shipped_files
from triton_mme_cdk.settings import BuildRunnerSettings

# What the runner runs (`python -m triton_mme gpu-check | build | upload | stage-candidate`), besides the
# catalog file: the entry point, the shared core and the catalog, archive_inspection, sizing, model_build
# and store packages. Nothing else of the project (the client, the local Triton, the CDK app) is shipped, so
# editing it never starts a GPU build.
SOURCE_FILES = (
    "triton_mme/__init__.py",
    "triton_mme/__main__.py",
    "triton_mme/cli.py",
    "triton_mme/arguments.py",
    "triton_mme/core",
    "triton_mme/catalog",
    "triton_mme/archive_inspection",
    "triton_mme/sizing",
    "triton_mme/model_build",
    "triton_mme/store",
    "requirements-build.txt",
)


class ModelBuildRunner(GpuRunner):
    """A GPU CodeBuild project that builds the catalog's archives, publishes them to the model store and
    stages the build's manifest as a candidate for the serving check (serving_check.py).

    Its role may write only archives, content-addressed files and candidate manifests to the store (never a
    build manifest or the live manifest: only the serving check publishes a build), read its own source and
    write its own logs; `role_policy` holds those grants, so whatever starts a build can wait for them. One
    build runs at a time and waits at most the runner group's `queue_timeout_minutes` for a runner.
    `fingerprint` changes exactly when what the build would produce can change.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        catalog: Path,
        runner: BuildRunnerSettings,
        triton_image_tag: str,
        tensorrt: bool,
        encryption_key: kms.IKey | None = None,
        source_root: Path | None = None,
        checkpoint_files: dict[str, Path] | None = None,
        checkpoint_reads: list[iam.PolicyStatement] | None = None,
        shards: list[list[str]] | None = None,
    ) -> None:
        catalog = Path(catalog)
        if not catalog.is_file() or catalog.name in SOURCE_FILES:
            raise ValueError(
                f"catalog {catalog} is not a catalog file; allowed: a path to one (e.g. models.yaml)"
            )
        image = build_image(triton_image_tag)
        shards = shards or []
        spec = build_spec(tensorrt=tensorrt, shards=max(1, len(shards)))
        self.shards = shards
        # The catalog goes to the root of the source, under its own name, wherever it lies on disk.
        variables = {
            **store_variables(store),
            "MODEL_CATALOG": catalog.name,
            TRITON_TAG_VARIABLE: triton_image_tag,
            "TENSORRT_REQUIREMENT": triton_image(triton_image_tag).tensorrt_requirement or "",
        }
        super().__init__(
            scope,
            construct_id,
            GpuRunnerProps(
                description="Builds the model catalog on a GPU and publishes the archives to the model store",
                build_image=codebuild.LinuxGpuBuildImage.aws_deep_learning_containers_image(
                    image.repository, image.tag
                ),
                runner=runner,
                files={
                    **shipped_files(SOURCE_FILES, root=source_root),
                    **(checkpoint_files or {}),
                    **({SHARDS_FILE_NAME: shards_json(shards).encode()} if len(shards) > 1 else {}),
                    catalog.name: catalog,
                },
                build_spec=spec,
                environment=variables,
                timeout_minutes=runner.timeout_minutes,
                encryption_key=encryption_key,
                batch_tasks=max(1, len(shards)),
                batch_timeout_minutes=runner.build_stage_minutes,
            ),
        )
        # What a build writes (never a build manifest nor the live manifest), and what its upload reads
        # back to skip identical archives.
        store.grant_publish_archives(self.project)
        store.grant_read(self.project)
        # The catalog's own S3 checkpoints, exactly (checkpoint_access).
        checkpoint_arns = []
        for statement in checkpoint_reads or []:
            self.project.add_to_role_policy(statement)
            checkpoint_arns += [arn for arn in statement.resources if arn.endswith("*")]
        self.acknowledge(
            [*store.archive_write_arns, *store.read_arns, *checkpoint_arns],
            reason="Reads and writes are confined to the model and manifest prefixes of the model store; "
            "writes to archives, candidate manifests and content-addressed files there. Reads of the "
            "catalog's own checkpoints are confined to the S3 folders its entries name.",
            image_reason="CodeBuild's own GPU image cannot be selected through CDK (aws/aws-cdk#29094); "
            "the AWS Deep Learning Containers image carries CUDA, Python and PyTorch for the build.",
        )
        # Everything the build's output depends on; the bucket name is a token at synthesis and does not.
        inputs = [self.source.asset_hash, runner.compute_type, image.tag, spec]
        inputs.append({**variables, "MODEL_BUCKET": ""})
        self.fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
