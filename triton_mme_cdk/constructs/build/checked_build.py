"""The deployment's model build: the GPU build, the serving check of its archives in the endpoint's image, the
engine that runs both whenever what they would produce changes, and the build's promotion to the live
manifest once the endpoint serves it (docs/deploy.md)."""

from __future__ import annotations

from aws_cdk import Annotations, CfnResource
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme.catalog import Catalog
from triton_mme.core.formats import Format
from triton_mme.core.locations import build_manifest_key
from triton_mme.sizing.build_time import catalog_shards, image_change_note
from triton_mme_cdk.catalog_files import CatalogFiles
from triton_mme_cdk.constructs.build.archive_locations import ArchiveLocations
from triton_mme_cdk.constructs.build.build_runner import ModelBuildRunner
from triton_mme_cdk.constructs.build.build_state_machine import BuildStage
from triton_mme_cdk.constructs.build.checkpoint_access import checkpoint_read_statements
from triton_mme_cdk.constructs.build.model_build_engine import ModelBuildEngine
from triton_mme_cdk.constructs.build.serving_check import ServingCheckRunner
from triton_mme_cdk.constructs.endpoint.triton_endpoint import CONTAINER_ENVIRONMENT, TritonEndpoint
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.manifest_promotion import ManifestPromotion
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.settings import BuildRunnerSettings


class CheckedModelBuild(Construct):
    """The catalog built on a GPU (`runner`, ModelBuildRunner), every archive of the build loaded and called
    in the endpoint's own image on a GPU before the build's manifest is published (`serving_check`,
    ServingCheckRunner, docs/serving-check.md), and the engine that runs both in order once per `fingerprint`
    (`engine`, ModelBuildEngine, with its `state_machine`). `done` completes once that build passed its check;
    whatever serves the build's archives waits for it, and so does the build's promotion to the live
    manifest (`promote_when_served`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        image: TritonImage,
        catalog: Catalog,
        catalog_files: CatalogFiles,
        runner: BuildRunnerSettings,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.store, self.encryption_key, self.log_retention = store, encryption_key, runner.log_retention
        rebuilds = image_change_note(catalog, image.tag)
        if rebuilds:  # printed by `cdk synth` and `cdk diff`, before any change of tag is deployed
            Annotations.of(image).add_info(rebuilds)
        self.runner = ModelBuildRunner(
            self,
            "ModelBuild",
            store=store,
            catalog=catalog_files.catalog_file,
            runner=runner,
            triton_image_tag=image.tag,
            tensorrt=Format.TENSORRT in catalog.formats,
            encryption_key=encryption_key,
            checkpoint_files=dict(catalog_files.shipped),
            checkpoint_reads=checkpoint_read_statements(catalog),
            # Above one runner, each stage fans out over shards balanced by estimated build time.
            shards=catalog_shards(catalog, runner.runners) if runner.runners > 1 else None,
        )
        shards = len(self.runner.shards)
        self.serving_check = ServingCheckRunner(
            self,
            "ServingCheck",
            store=store,
            image=image,
            runner=runner,
            build_fingerprint=self.runner.fingerprint,
            container_environment=CONTAINER_ENVIRONMENT,
            encryption_key=encryption_key,
            shards=max(1, shards),
        )
        self.fingerprint = self.serving_check.fingerprint
        self.engine = ModelBuildEngine(
            self,
            "ModelBuildEngine",
            build=self._stage("model build", self.runner, runner.build_stage_minutes, shards),
            check=self._stage("serving check", self.serving_check, runner.check_stage_minutes, shards),
            fingerprint=self.fingerprint,
            bucket=store.bucket,
            build_manifest_key=build_manifest_key(self.fingerprint, store.manifest_prefix),
            log_retention=runner.log_retention,
        )
        self.state_machine, self.done = self.engine.state_machine, self.engine.done
        # `cdk diff` names the models a change rebuilds: each entry's digest (its settings, pinned checkpoint)
        # in the run's metadata, which no handler reads (its properties would travel in every request).
        run = self.engine.resource.node.default_child
        assert isinstance(run, CfnResource)
        run.add_metadata("Models", {entry.name: entry.digest for entry in catalog.models})
        # The build starts as soon as the run exists: both stages' grants must exist before it.
        self.engine.resource.node.add_dependency(self.runner.role_policy, self.serving_check.role_policy)

    @staticmethod
    def _stage(
        name: str, stage: ModelBuildRunner | ServingCheckRunner, minutes: int, shards: int
    ) -> BuildStage:
        return BuildStage(name, stage.project, stage.log_group, minutes, batch=shards > 1)

    def promote_when_served(self, endpoint: TritonEndpoint) -> ManifestPromotion:
        """The live manifest moved to this build once `endpoint` serves the deployment's config."""
        promotion = ManifestPromotion(
            self,
            "ManifestPromotion",
            store=self.store,
            fingerprint=self.fingerprint,
            endpoint_name=endpoint.endpoint_name,
            endpoint_arn=endpoint.endpoint.ref,
            endpoint_config_name=endpoint.endpoint_config.attr_endpoint_config_name,
            log_retention=self.log_retention,
            encryption_key=self.encryption_key,
        )
        promotion.resource.node.add_dependency(self.done)
        return promotion

    def locate_archives(self, construct_id: str, archives: dict[str, Format]) -> ArchiveLocations:
        """Where this build put each of `archives` (model -> the format it serves): their keys carry their
        content hashes, so they are read from the build's manifest once it passed its check."""
        locations = ArchiveLocations(
            self,
            construct_id,
            store=self.store,
            fingerprint=self.fingerprint,
            archives=archives,
            log_retention=self.log_retention,
            encryption_key=self.encryption_key,
        )
        locations.resource.node.add_dependency(self.done)
        return locations
