"""The whole multi-model endpoint as one construct: what a platform team embeds in its own CDK app.

`TritonMultiModelEndpoint(self, "Mme", TritonMultiModelEndpointProps(catalog=Path("models.yaml")))` adds
the model store, the Triton image, the endpoint and its logs, the GPU build runner with its serving check and
the trigger that runs both on deployment, the autoscaling, the monitoring, the per-model observability, the
deployment policy and events, and the manifest promotion (docs/embedding.md, docs/constructs.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path

from aws_cdk import Annotations, CfnResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from triton_mme.core.catalog import Catalog, Format, load_catalog
from triton_mme.core.locations import build_manifest_key
from triton_mme.core.naming import bounded_name
from triton_mme.core.triton_container import COMPONENT_ENVIRONMENT
from triton_mme.sizing.build_time import catalog_shards, image_change_note
from triton_mme.sizing.offline_sources import check_sources
from triton_mme_cdk.build_target import check_build_target, resolve_build_runners
from triton_mme_cdk.constructs.archive_locations import ArchiveLocations
from triton_mme_cdk.constructs.build_runner import ModelBuildRunner
from triton_mme_cdk.constructs.checkpoint_access import checkpoint_read_statements, shipped_checkpoints
from triton_mme_cdk.constructs.deployment_events import DeploymentEvents
from triton_mme_cdk.constructs.endpoint_autoscaling import EndpointAutoscaling
from triton_mme_cdk.constructs.endpoint_logs import EndpointLogs
from triton_mme_cdk.constructs.inference_component_endpoint import InferenceComponentEndpoint
from triton_mme_cdk.constructs.manifest_promotion import ManifestPromotion
from triton_mme_cdk.constructs.model_build_engine import BuildStage, ModelBuildEngine
from triton_mme_cdk.constructs.model_observability import ModelObservability
from triton_mme_cdk.constructs.model_store import ModelStore, ModelStoreProps
from triton_mme_cdk.constructs.monitoring import EndpointMonitoring
from triton_mme_cdk.constructs.operator_access import OperatorAccess
from triton_mme_cdk.constructs.serving_check import ServingCheckRunner
from triton_mme_cdk.constructs.triton_endpoint import CONTAINER_ENVIRONMENT, TritonEndpoint
from triton_mme_cdk.constructs.triton_image import TritonImage
from triton_mme_cdk.placement_rules import (
    component_instances,
    dedicated_entries,
    dedicated_problem,
)
from triton_mme_cdk.settings import (
    AlarmThresholds,
    BuildRunnerSettings,
    EndpointSettings,
    ScalingSettings,
    Settings,
    SettingsError,
    UpdatePolicy,
)

# The inference component endpoint's name by default: the multi-model endpoint's, and this.
DEDICATED_ENDPOINT_SUFFIX = "ic"


@dataclass(frozen=True, kw_only=True)
class TritonMultiModelEndpointProps:
    """The props of a TritonMultiModelEndpoint.

    The groups are the app's settings groups (triton_mme_cdk.settings): each of their fields is one cdk.json
    key of docs/settings.md with the same default, and the construct checks them together as synthesis does
    (the GPU, driver and build runner against the Triton tag, the update steps against the fleet).
    """

    catalog: Path
    """The model catalog (models.yaml) the build stage builds: any file, copied into the build runner's
    source.

    @default - required
    """

    endpoint_name: str | None = None
    """The SageMaker endpoint's name; fixed, since the alarms that guard its updates watch it by name.

    @default - the stack's name
    """

    dedicated_endpoint_name: str | None = None
    """The name of the endpoint that hosts the catalog's `placement: dedicated` entries as inference
    components; fixed, like the endpoint's. Unused when the catalog has none (then no such endpoint exists).

    @default - the endpoint's name followed by -ic
    """

    endpoint: EndpointSettings = field(default_factory=EndpointSettings)
    """Instance type, Triton image tag, inference AMI, network isolation, endpoint log retention.

    @default - ml.g5.xlarge, the default Triton tag of the platform table, `auto` AMI, isolated, 30 days
    """

    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    """Instance counts and target tracking on GPU utilization (and optionally invocations).

    @default - 2 instances, autoscaling 2..5 at 60 % GPU utilization
    """

    alarms: AlarmThresholds = field(default_factory=AlarmThresholds)
    """Alarm thresholds, evaluation window and the optional email subscriber of the alarm topic.

    @default - the thresholds of docs/settings.md, no email subscription
    """

    updates: UpdatePolicy = field(default_factory=UpdatePolicy)
    """How an endpoint update moves traffic and when it rolls back.

    @default - a one-instance canary, 600 s baking, 7200 s timeout
    """

    build: BuildRunnerSettings = field(default_factory=BuildRunnerSettings)
    """The GPU CodeBuild runners of the build and the serving check: size, timeouts, log retention.

    @default - SMALL (A10G), 30 min build, 15 min check, 5 min queue, 30 days of logs
    """

    encryption_key: kms.IKey | None = None
    """A customer managed key for the model bucket, the build runners and (where the instance type allows)
    the endpoint's volume.

    @default - no customer key: SSE-S3 for the bucket, AWS managed keys elsewhere
    """

    @classmethod
    def from_settings(
        cls, settings: Settings, *, encryption_key: kms.IKey | None = None
    ) -> TritonMultiModelEndpointProps:
        """The props of the app's settings (its catalog, endpoint name and groups as they are); the
        construct's errors then name the settings' cdk.json keys, as the app's own do."""
        props = cls(
            catalog=Path(settings.model_catalog),
            endpoint_name=settings.endpoint_name,
            endpoint=settings.endpoint,
            scaling=settings.scaling,
            alarms=settings.alarms,
            updates=settings.updates,
            build=settings.build,
            encryption_key=encryption_key,
        )
        object.__setattr__(props, "_messages_in_settings_keys", True)
        return props

    def settings(self, endpoint_name: str) -> Settings:
        """The groups checked together (SettingsError, one line, on a combination that cannot deploy)."""
        return Settings(
            stack_name=endpoint_name,
            model_catalog=str(self.catalog),
            endpoint=self.endpoint,
            scaling=self.scaling,
            alarms=self.alarms,
            updates=self.updates,
            build=self.build,
        )


def _prop_names() -> dict[str, str]:
    """Each cdk.json key a settings message may name -> the prop path an embedder wrote instead
    (`minInstanceCount` -> `scaling.min_instance_count`)."""
    names = {"modelCatalog": "catalog", "endpointName": "endpoint_name"}
    for prop in fields(TritonMultiModelEndpointProps):
        group = prop.default_factory() if callable(prop.default_factory) else None
        for name, setting in getattr(type(group), "model_fields", {}).items():
            names[setting.alias or name] = f"{prop.name}.{name}"
    return names


@contextmanager
def in_prop_names(props: TritonMultiModelEndpointProps) -> Iterator[None]:
    """A SettingsError raised inside, its cdk.json keys replaced by the props' own names: an embedder never
    wrote `minInstanceCount`, but `scaling=ScalingSettings(min_instance_count=...)`. Props of the app's
    settings (from_settings) keep the keys its cdk.json and `-c` options use."""
    try:
        yield
    except SettingsError as error:
        if getattr(props, "_messages_in_settings_keys", False):
            raise
        names = _prop_names()
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
        raise SettingsError(pattern.sub(lambda key: names[key.group(1)], str(error))) from None


class TritonMultiModelEndpoint(Construct):
    """A SageMaker GPU multi-model endpoint served by NVIDIA Triton, with its model store, its GPU model
    build and serving check, its autoscaling, monitoring and guarded updates.

    Raises SettingsError or CatalogError (one line each) for props or a catalog that cannot deploy. Children:
    `store` (ModelStore), `endpoint` (TritonEndpoint: `cfn_model`, `cfn_endpoint_config`, `cfn_endpoint`),
    `build_runner`, `serving_check`, `build`, `autoscaling` (None without), `monitoring`, `models`,
    `deployment_events`, `operators` (the acceptance role and the models policy), `promotion`, and for a
    catalog with `placement: dedicated` entries `dedicated` (InferenceComponentEndpoint: one inference
    component per entry, each with its own scaling, alarm and rolling updates) and `archive_locations`
    (None without). `grant_invoke` lets a principal call both endpoints.
    """

    def __init__(self, scope: Construct, construct_id: str, props: TritonMultiModelEndpointProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        with in_prop_names(props):
            self.settings = settings = props.settings(props.endpoint_name or Stack.of(scope).stack_name)
            # Every source resolves offline (torchvision's registry, the shipped configs, each checkpoint's
            # headers and pinned content), so a typo, a changed checkpoint or a pickle stops here.
            catalog = check_sources(load_catalog(props.catalog), origin=str(props.catalog))
            # Without buildRunners, the fewest runners on which the catalog's stages fit their timeouts.
            self.settings = settings = resolve_build_runners(settings, catalog)
            check_build_target(settings, catalog)
            problem = dedicated_problem(settings, catalog)
            if problem:
                raise SettingsError(problem)
        self.encryption_key = props.encryption_key
        self.store = ModelStore(self, "ModelStore", ModelStoreProps(encryption_key=self.encryption_key))
        self.image = TritonImage(self, "TritonImage", tag=settings.endpoint.triton_image_tag)
        rebuilds = image_change_note(catalog, settings.endpoint.triton_image_tag)
        if rebuilds:  # printed by `cdk synth` and `cdk diff`, before any change of tag is deployed
            Annotations.of(self.image).add_info(rebuilds)
        self.endpoint = TritonEndpoint(
            self,
            "Triton",
            name=settings.endpoint_name,
            store=self.store,
            image=self.image,
            instance_type=settings.endpoint.instance_type,
            initial_instance_count=settings.scaling.initial_instance_count,
            encryption_key=self.encryption_key,
            encrypt_volume=settings.endpoint.volume_accepts_kms_key,
            inference_ami_version=settings.endpoint.resolved_inference_ami,
            network_isolation=settings.endpoint.network_isolation,
        )
        self.endpoint_logs = EndpointLogs(
            self,
            "EndpointLogs",
            endpoint_name=self.endpoint.endpoint_name,
            retention=settings.endpoint.log_retention,
        )
        self.build_runner = ModelBuildRunner(
            self,
            "ModelBuild",
            store=self.store,
            catalog=props.catalog,
            runner=settings.build,
            triton_image_tag=settings.endpoint.triton_image_tag,
            tensorrt=Format.TENSORRT in catalog.formats,
            encryption_key=self.encryption_key,
            checkpoint_files=shipped_checkpoints(catalog, Path(props.catalog)),
            checkpoint_reads=checkpoint_read_statements(catalog),
            # Above one runner, each stage fans out over shards balanced by estimated build time.
            shards=catalog_shards(catalog, settings.build.runners) if settings.build.runners > 1 else None,
        )
        shards = len(self.build_runner.shards)
        # Every archive of the build, loaded and called in the endpoint's own image on a GPU before the
        # build's manifest is published (docs/serving-check.md).
        self.serving_check = ServingCheckRunner(
            self,
            "ServingCheck",
            store=self.store,
            image=self.image,
            runner=settings.build,
            build_fingerprint=self.build_runner.fingerprint,
            container_environment=CONTAINER_ENVIRONMENT,
            encryption_key=self.encryption_key,
            shards=max(1, shards),
        )
        runner = settings.build
        self.build = ModelBuildEngine(
            self,
            "ModelBuildEngine",
            build=BuildStage(
                "model build",
                self.build_runner.project,
                self.build_runner.log_group,
                runner.build_stage_minutes,
                batch=shards > 1,
            ),
            check=BuildStage(
                "serving check",
                self.serving_check.project,
                self.serving_check.log_group,
                runner.check_stage_minutes,
                batch=shards > 1,
            ),
            fingerprint=self.serving_check.fingerprint,
            bucket=self.store.bucket,
            build_manifest_key=build_manifest_key(self.serving_check.fingerprint, self.store.manifest_prefix),
            log_retention=runner.log_retention,
        )
        # `cdk diff` names the models a change rebuilds: each entry's digest (its settings, pinned checkpoint)
        # in the run's metadata, which no handler reads (its properties would travel in every request).
        run = self.build.resource.node.default_child
        assert isinstance(run, CfnResource)
        run.add_metadata("Models", {entry.name: entry.digest for entry in catalog.models})
        # The build starts as soon as the run exists: both stages' grants must exist before it.
        self.build.resource.node.add_dependency(self.build_runner.role_policy, self.serving_check.role_policy)
        # The Model and the endpoint config do not wait: CreateModel and CreateEndpointConfig check the image,
        # the instance type and the inference AMI in the deployment's first minutes. The endpoint waits: it
        # starts serving the prefix, or moves to a new image, only once the build's archives passed the
        # serving check in that image (docs/deploy.md, "What waits for the build").
        self.endpoint.endpoint.node.add_dependency(self.build.done)
        self.autoscaling = (
            EndpointAutoscaling(
                self,
                "Autoscaling",
                endpoint_name=self.endpoint.endpoint_name,
                variant_name=self.endpoint.variant_name,
                scaling=settings.scaling,
            )
            if settings.scaling.enabled
            else None
        )
        self.monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint_name=self.endpoint.name,
            variant_name=self.endpoint.variant_name,
            thresholds=settings.alarms,
            min_instances=settings.scaling.min_instance_count,
            max_instances=settings.scaling.max_instance_count,
        )
        # Loads, evictions, failed loads per TargetModel from the endpoint's own log (docs/observability.md).
        self.models = ModelObservability(
            self,
            "ModelObservability",
            endpoint_name=self.endpoint.name,
            endpoint_log_group_name=self.endpoint_logs.log_group_name,
            log_group_ready=self.endpoint_logs.retention,
            retention=settings.endpoint.log_retention,
            cache_hit=self.monitoring.metrics.cache_hit_ratio(),
            evictions_per_minute=settings.alarms.thrash_evictions_per_minute,
            alarm_topic=self.monitoring.alarm_topic.topic,
        )
        self.monitoring.dashboard.add_section("Per model", self.models.dashboard_widgets())
        # Updates shift traffic step by step and roll back on the monitoring's alarms, which exist before the
        # endpoint: they watch it by its fixed name (guard_updates).
        self.endpoint.guard_updates(
            settings.updates,
            rollback_alarms=self.monitoring.rollback_alarms,
        )
        # How SageMaker carried out each update, for the acceptance run: recorded from before the endpoint's
        # first update on (the rule matches the endpoint's fixed name).
        self.deployment_events = DeploymentEvents(
            self,
            "DeploymentEvents",
            endpoint_name=self.endpoint.name,
            retention=settings.endpoint.log_retention,
        )
        self.endpoint.endpoint.node.add_dependency(self.deployment_events.rule, self.deployment_events.policy)
        # Exactly what `triton-mme acceptance` and `triton-mme models --stack` call (docs/first-deploy.md).
        self.operators = OperatorAccess(
            self,
            "Operators",
            endpoint=self.endpoint,
            store=self.store,
            deployment_events=self.deployment_events,
            alarms=list(self.monitoring.alarms.values()),
            build_state_machine=self.build.state_machine,
            encryption_key=self.encryption_key,
        )
        # The live manifest moves to this build only once the endpoint serves this deployment's config.
        self.promotion = ManifestPromotion(
            self,
            "ManifestPromotion",
            store=self.store,
            fingerprint=self.serving_check.fingerprint,
            endpoint_name=self.endpoint.endpoint_name,
            endpoint_arn=self.endpoint.endpoint.ref,
            endpoint_config_name=self.endpoint.endpoint_config.attr_endpoint_config_name,
            log_retention=settings.build.log_retention,
            encryption_key=self.encryption_key,
        )
        self.promotion.resource.node.add_dependency(self.build.done)
        self.archive_locations: ArchiveLocations | None = None
        self.dedicated = self._dedicated_models(catalog) if dedicated_entries(catalog) else None
        if self.dedicated is not None:
            # The acceptance run calls the dedicated models on their endpoint too, and reads its status.
            self.dedicated.grant_invoke(self.operators.acceptance_role)
            self.dedicated.grant_describe(self.operators.acceptance_role)

    def _dedicated_models(self, catalog: Catalog) -> InferenceComponentEndpoint:
        """The inference component endpoint of the catalog's dedicated entries, after the same build."""
        settings, entries = self.settings, dedicated_entries(catalog)
        # The archives' keys carry their content hashes: read from the build's manifest once it exists.
        self.archive_locations = locations = ArchiveLocations(
            self,
            "DedicatedArchives",
            store=self.store,
            fingerprint=self.serving_check.fingerprint,
            archives={entry.name: served for entry in entries if (served := entry.dedicated_format)},
            log_retention=settings.build.log_retention,
            encryption_key=self.encryption_key,
        )
        locations.resource.node.add_dependency(self.build.done)
        dedicated = InferenceComponentEndpoint(
            self,
            "Dedicated",
            name=self.props.dedicated_endpoint_name
            or bounded_name(settings.endpoint_name, DEDICATED_ENDPOINT_SUFFIX),
            store=self.store,
            image=self.image,
            environment=COMPONENT_ENVIRONMENT,
            entries=entries,
            artifact_urls={entry.name: locations.url(entry.name) for entry in entries},
            instance_type=settings.endpoint.instance_type,
            instances=component_instances(catalog),
            scaling=settings.scaling,
            inference_ami_version=settings.endpoint.resolved_inference_ami,
            network_isolation=settings.endpoint.network_isolation,
            encryption_key=self.encryption_key,
            encrypt_volume=settings.endpoint.volume_accepts_kms_key,
        )
        # Like the multi-model endpoint, it serves only archives that passed the serving check in its image.
        dedicated.endpoint.node.add_dependency(self.build.done)
        retention = settings.endpoint.log_retention
        self.endpoint_logs.add_endpoint(
            "DedicatedRetention", endpoint_name=dedicated.endpoint_name, retention=retention
        )
        dedicated.guard_updates(
            settings.updates, thresholds=settings.alarms, alarm_topic=self.monitoring.alarm_topic.topic
        )
        self.monitoring.dashboard.add_section("Inference components", dedicated.dashboard_widgets())
        return dedicated

    @property
    def endpoint_name(self) -> str:
        """The endpoint's name, as a reference (what depends on it comes after the endpoint)."""
        return self.endpoint.endpoint_name

    @property
    def cfn_endpoint(self) -> sagemaker.CfnEndpoint:
        return self.endpoint.cfn_endpoint

    @property
    def cfn_endpoint_config(self) -> sagemaker.CfnEndpointConfig:
        return self.endpoint.cfn_endpoint_config

    @property
    def cfn_model(self) -> sagemaker.CfnModel:
        return self.endpoint.cfn_model

    @property
    def dedicated_endpoint_name(self) -> str | None:
        """The inference component endpoint's name, as a reference (None without dedicated entries)."""
        return self.dedicated.endpoint_name if self.dedicated is not None else None

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` call sagemaker:InvokeEndpoint on the endpoint (any TargetModel) and, with dedicated
        entries, on the inference component endpoint (any of its components)."""
        grant = self.endpoint.grant_invoke(grantee)
        if self.dedicated is not None:
            grant = grant.combine(self.dedicated.grant_invoke(grantee))
        return grant
