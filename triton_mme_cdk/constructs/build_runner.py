from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme.core.platform import build_image, triton_image
from triton_mme_cdk.constructs.build_spec import build_spec
from triton_mme_cdk.constructs.model_store import ModelStore
from triton_mme_cdk.constructs.nag import acknowledge_codebuild_grants, acknowledge_wildcard_resources
from triton_mme_cdk.constructs.runner_source import runner_source

# What the runner runs (`python -m triton_mme gpu-check | build | upload | stage-candidate`), besides the
# catalog: the entry point, the shared core and the model_build and store packages. Nothing else of the
# project (the client, the local Triton, the CDK app) is shipped, so editing it never starts a GPU build.
SOURCE_FILES = (
    "triton_mme/__init__.py",
    "triton_mme/__main__.py",
    "triton_mme/cli.py",
    "triton_mme/core",
    "triton_mme/model_build",
    "triton_mme/store",
    "requirements-build.txt",
)
COMPUTE_TYPES = {"SMALL": codebuild.ComputeType.SMALL, "LARGE": codebuild.ComputeType.LARGE}


class ModelBuildRunner(Construct):
    """A GPU CodeBuild project that builds the catalog's archives, publishes them to the model store and
    stages the build's manifest as a candidate for the serving check (serving_check.py).

    Its role may write only archives, content-addressed files and candidate manifests to the store (never a
    build manifest or the live manifest: only the serving check publishes a build), read its own source and
    write its own logs; `role_policy` holds those grants, so
    whatever starts a build can wait for them. One build runs at a time and waits at most `queued_timeout`
    for a runner. `fingerprint` changes exactly when what the build would produce can change.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        project_root: Path,
        catalog: str,
        compute_type: str,
        triton_image_tag: str,
        tensorrt: bool,
        timeout: Duration,
        queued_timeout: Duration,
        log_retention: logs.RetentionDays,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        path = Path(catalog)
        if path.is_absolute() or ".." in path.parts or not (project_root / path).is_file():
            raise ValueError(
                f"catalog {catalog} is not a file inside {project_root}; allowed: a relative path to one"
            )
        image = build_image(triton_image_tag)
        self.source = runner_source(self, "Source", project_root=project_root, paths=(*SOURCE_FILES, catalog))
        spec = build_spec(tensorrt=tensorrt)
        variables = {
            "MODEL_BUCKET": store.bucket.bucket_name,
            "MODEL_PREFIX": store.model_prefix,
            "MANIFEST_PREFIX": store.manifest_prefix,
            "MODEL_CATALOG": catalog,
            "TRITON_IMAGE_TAG": triton_image_tag,
            "TENSORRT_REQUIREMENT": triton_image(triton_image_tag).tensorrt_requirement or "",
        }
        self.log_group = logs.LogGroup(
            self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.project = codebuild.Project(
            self,
            "Project",
            description="Builds the model catalog on a GPU and publishes the archives to the model store",
            source=codebuild.Source.s3(bucket=self.source.bucket, path=self.source.s3_object_key),
            build_spec=codebuild.BuildSpec.from_object(spec),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxGpuBuildImage.aws_deep_learning_containers_image(
                    image.repository, image.tag
                ),
                compute_type=COMPUTE_TYPES[compute_type],
            ),
            environment_variables={
                k: codebuild.BuildEnvironmentVariable(value=v) for k, v in variables.items()
            },
            timeout=timeout,
            queued_timeout=queued_timeout,
            # A second build of the same catalog would race the first to publish; StartBuild refuses it.
            concurrent_build_limit=1,
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.log_group)
            ),
            encryption_key=encryption_key,
            grant_report_group_permissions=False,
        )
        self.role_policy = self._grant_store_writes(store, encryption_key)
        # Everything the build's output depends on; the bucket name is a token at synthesis and does not.
        inputs = [self.source.asset_hash, compute_type, image.tag, spec, {**variables, "MODEL_BUCKET": ""}]
        self.fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()

    def _grant_store_writes(self, store: ModelStore, encryption_key: kms.IKey | None) -> iam.Policy:
        role = self.project.role
        assert role is not None
        # What a build writes (never a build manifest nor the live manifest), and what its upload reads
        # back to skip identical archives.
        store.grant_publish_archives(self.project)
        store.grant_read(self.project)
        prefixes = [*store.archive_write_arns, *store.read_arns]
        policy = role.node.find_child("DefaultPolicy")
        assert isinstance(policy, iam.Policy)
        acknowledge_wildcard_resources(
            policy,
            prefixes,
            reason="Reads and writes are confined to the model and manifest prefixes of the model store; "
            "writes to archives, candidate manifests and content-addressed files there.",
        )
        # With a key, the project's key is the store's: CodeBuild's grant on it also covers SSE-KMS uploads.
        acknowledge_codebuild_grants(
            policy,
            self.project,
            encrypted=encryption_key is not None,
            image_reason="CodeBuild's own GPU image cannot be selected through CDK (aws/aws-cdk#29094); "
            "the AWS Deep Learning Containers image carries CUDA, Python and PyTorch for the build.",
        )
        return policy
