"""Runs every preflight check for one set of settings and one region."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triton_mme.catalog import Catalog
from triton_mme.core.platform import (
    PLATFORM,
    build_image,
    deployable_regions,
    dlc_registry_account,
    endpoint_quota,
)
from triton_mme_cdk.constructs.endpoint.deployment_events import ACCOUNT_LOGS_RESOURCE_POLICIES
from triton_mme_cdk.constructs.endpoint.triton_endpoint import VARIANT_NAME
from triton_mme_cdk.preflight.checkpoints import check_checkpoints
from triton_mme_cdk.preflight.checks import (
    CheckResult,
    check_bootstrap,
    check_codebuild_gpu_quota,
    check_endpoint_quota,
    check_image,
    check_region,
)
from triton_mme_cdk.preflight.deployed import check_instance_type_change, check_variant_name
from triton_mme_cdk.preflight.kms_key import check_kms_key
from triton_mme_cdk.preflight.logs_policies import check_logs_resource_policies
from triton_mme_cdk.settings import Settings
from triton_mme_cdk.settings.placement_rules import (
    component_instances,
    dedicated_entries,
    scale_to_zero_problem,
)
from triton_mme_cdk.settings.platform_rules import region_problem
from triton_mme_cdk.stack import ENDPOINT_NAME_OUTPUT


@dataclass(frozen=True)
class PreflightClients:
    service_quotas: Any
    ecr: Any
    cloudformation: Any
    sagemaker: Any
    application_autoscaling: Any
    kms: Any = None
    logs: Any = None
    s3: Any = None

    @classmethod
    def from_session(cls, session: Any) -> PreflightClients:
        return cls(
            service_quotas=session.client("service-quotas"),
            ecr=session.client("ecr"),
            cloudformation=session.client("cloudformation"),
            sagemaker=session.client("sagemaker"),
            application_autoscaling=session.client("application-autoscaling"),
            kms=session.client("kms"),
            logs=session.client("logs"),
            s3=session.client("s3"),
        )


def run_preflight(
    settings: Settings, region: str, clients: PreflightClients, catalog: Catalog | None = None
) -> list[CheckResult]:
    """Every check, in the order a first deployment meets them (the catalog's S3 checkpoints with it)."""
    if catalog is not None:
        # The runner count synthesis takes when buildRunners is not given: the quota is checked against it.
        from triton_mme_cdk.settings.build_target import resolve_build_runners

        settings = resolve_build_runners(settings, catalog)
    tag = settings.endpoint.triton_image_tag
    registry = dlc_registry_account(region)
    unconfirmed = settings.allow_unconfirmed_build_region
    results = [
        check_region(
            region,
            region_problem(region, tag, allow_unconfirmed_build_region=unconfirmed),
            deployable_regions(tag, unconfirmed_build_regions=unconfirmed),
        )
    ]
    if not results[0].ok:
        return results  # the registries and quotas of an unusable region say nothing useful
    if settings.kms_key_arn:
        results.append(check_kms_key(clients.kms, settings.kms_key_arn))
    if catalog is not None and clients.s3 is not None:
        results.append(check_checkpoints(clients.s3, catalog))
    if catalog is not None and any(
        entry.dedicated and entry.dedicated.min_copies == 0 for entry in dedicated_entries(catalog)
    ):
        results.append(check_scale_to_zero(region, catalog))
    return [
        *results,
        check_bootstrap(clients.cloudformation),
        check_endpoint_quota(
            clients.service_quotas,
            endpoint_quota(settings.endpoint.instance_type),
            *endpoint_instances(settings, catalog),
        ),
        check_codebuild_gpu_quota(
            clients.service_quotas,
            PLATFORM.codebuild_gpus[settings.build.compute_type].concurrency_quota,
            settings.build.runners,
        ),
        check_image(
            clients.ecr,
            "triton-image",
            region=region,
            registry=registry,
            repository=PLATFORM.images.repository.value,
            tag=tag,
        ),
        check_image(
            clients.ecr,
            "build-image",
            region=region,
            registry=registry,
            repository=build_image(tag).repository,
            tag=build_image(tag).tag,
        ),
        check_logs_resource_policies(
            logs=clients.logs,
            cloudformation=clients.cloudformation,
            stack_name=settings.stack_name,
            stack_defines=ACCOUNT_LOGS_RESOURCE_POLICIES,
            region=region,
        ),
        check_instance_type_change(
            cloudformation=clients.cloudformation,
            sagemaker=clients.sagemaker,
            autoscaling=clients.application_autoscaling,
            stack_name=settings.stack_name,
            endpoint_output=ENDPOINT_NAME_OUTPUT,
            variant_name=VARIANT_NAME,
            instance_type=settings.endpoint.instance_type,
        ),
        check_variant_name(
            cloudformation=clients.cloudformation,
            sagemaker=clients.sagemaker,
            stack_name=settings.stack_name,
            endpoint_output=ENDPOINT_NAME_OUTPUT,
            variant_name=VARIANT_NAME,
        ),
    ]


def check_scale_to_zero(region: str, catalog: Catalog) -> CheckResult:
    """Entries with min_copies 0 need a region where MinInstanceCount 0 is known to be accepted (an
    environment-agnostic template is checked here, at the deploy region)."""
    problem = scale_to_zero_problem(region, dedicated_entries(catalog))
    if problem is None:
        return CheckResult(
            "scale-to-zero", True, f"{region} accepts MinInstanceCount 0 (inference_components.yaml)"
        )
    return CheckResult(
        "scale-to-zero", False, problem.split("; allowed: ")[0], problem.split("; allowed: ")[1]
    )


def endpoint_instances(settings: Settings, catalog: Catalog | None) -> tuple[int, str]:
    """The most instances of `instanceType` the stack's endpoints run at once, and why, in one phrase: the
    multi-model endpoint at the peak of an update, and the component endpoint (the same type) at its most
    when the catalog has dedicated entries."""
    needed, why = settings.peak_update_instances, update_capacity(settings)
    if catalog is None or not dedicated_entries(catalog):
        return needed, why
    _, _, components = component_instances(catalog)
    return needed + components, (
        f"{why}; and {components} on the component endpoint (the dedicated entries' max_copies, plus their "
        "updates)"
    )


def update_capacity(settings: Settings) -> str:
    """Why the endpoint can run `settings.peak_update_instances` instances at once, in one phrase."""
    largest = settings.update_fleet.largest
    extra = settings.peak_update_instances - largest
    bound = "maxInstanceCount" if settings.scaling.enabled else "initialInstanceCount"
    during = (
        f"a {settings.updates.strategy.value} update runs a second fleet beside the first"
        if settings.updates.strategy.is_blue_green
        else "a rolling update adds a batch; its rollback brings the old instances back "
        + (f"{settings.updates.rollback_step} at a time" if settings.updates.rollback_step else "all at once")
    )
    return f"{bound}={largest}, plus {extra} while {during}"
