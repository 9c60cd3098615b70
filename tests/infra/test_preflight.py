"""The preflight checks against AWS's API shapes (botocore Stubber): every check passes and fails, offline."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from synth_support import KEY_ARN

import app
from triton_mme.catalog import parse_catalog
from triton_mme.core.platform import (
    PLATFORM,
    Quota,
    endpoint_quota,
)
from triton_mme_cdk.constructs.endpoint.deployment_events import ACCOUNT_LOGS_RESOURCE_POLICIES
from triton_mme_cdk.preflight import PreflightClients, run_preflight
from triton_mme_cdk.preflight.checks import (
    check_bootstrap,
    check_codebuild_gpu_quota,
    check_endpoint_quota,
    check_image,
    check_region,
)
from triton_mme_cdk.preflight.deployed import check_instance_type_change, check_variant_name
from triton_mme_cdk.preflight.logs_policies import check_logs_resource_policies
from triton_mme_cdk.preflight.run import check_scale_to_zero, endpoint_instances, update_capacity
from triton_mme_cdk.settings import Settings

REGION = "eu-west-1"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ENDPOINT = "Endpoint-AbC123"
SCALING_RESOURCE = f"endpoint/{ENDPOINT}/variant/AllTraffic"
# The real quotas (Service Quotas' own codes and names), as the platform table holds them.
ENDPOINT_QUOTA = Quota("sagemaker", "L-1928E07B", "ml.g5.xlarge for endpoint usage")
GPU_QUOTA = Quota("codebuild", "L-F1FE1B52", "Concurrently running builds for Linux GPU Small environment")


class Clients:
    """One stubbed client per service the preflight reads."""

    def __init__(self) -> None:
        def client(name: str) -> Any:
            return boto3.client(name, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")

        self.service_quotas = client("service-quotas")
        self.ecr = client("ecr")
        self.cloudformation = client("cloudformation")
        self.sagemaker = client("sagemaker")
        self.application_autoscaling = client("application-autoscaling")
        self.kms = client("kms")
        self.logs = client("logs")
        self.s3 = client("s3")
        self.stubs = {name: Stubber(getattr(self, name)) for name in vars(self).copy()}

    def __getitem__(self, name: str) -> Stubber:
        return self.stubs[name]

    def preflight_clients(self) -> PreflightClients:
        return PreflightClients(
            self.service_quotas,
            self.ecr,
            self.cloudformation,
            self.sagemaker,
            self.application_autoscaling,
            self.kms,
            self.logs,
            self.s3,
        )

    def client(self, name: str) -> Any:  # the boto3.Session interface app.preflight uses
        return getattr(self, name.replace("-", "_"))


@pytest.fixture
def aws() -> Iterator[Clients]:
    clients = Clients()
    for stub in clients.stubs.values():
        stub.activate()
    yield clients
    for stub in clients.stubs.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


# --- stubbed answers ------------------------------------------------------------------------------------


def quota(aws: Clients, quota: Quota, applied: float | None, default: float | None = None) -> None:
    """GetServiceQuota answering `applied` for the quota's code; when it has none (NoSuchResourceException),
    GetAWSDefaultServiceQuota answering `default`, or none either."""
    params = {"ServiceCode": quota.service_code, "QuotaCode": quota.code}

    def answer(value: float) -> dict[str, Any]:
        return {"Quota": {"ServiceCode": quota.service_code, "QuotaCode": quota.code, "QuotaName": quota.name,
                          "Value": value}}  # fmt: skip

    for operation, value in (("get_service_quota", applied), ("get_aws_default_service_quota", default)):
        if value is not None:
            aws["service_quotas"].add_response(operation, answer(value), params)
            return
        aws["service_quotas"].add_client_error(
            operation, "NoSuchResourceException", "The request failed because the quota does not exist.",
            expected_params=params,
        )  # fmt: skip


def listed_quotas(
    aws: Clients, service: str, applied: dict[str, float], defaults: dict[str, float] | None = None
) -> None:
    """ListServiceQuotas (and ListAWSDefaultServiceQuotas) answering quotas by name (the fallback)."""

    def page(values: dict[str, float]) -> dict[str, Any]:
        return {
            "Quotas": [
                {"ServiceCode": service, "QuotaName": name, "QuotaCode": f"L-{i:08d}", "Value": value}
                for i, (name, value) in enumerate(values.items())
            ]
        }

    aws["service_quotas"].add_response("list_service_quotas", page(applied), {"ServiceCode": service})
    if defaults is not None:
        aws["service_quotas"].add_response(
            "list_aws_default_service_quotas", page(defaults), {"ServiceCode": service}
        )


def image(aws: Clients, registry: str, repository: str, tag: str, *, exists: bool = True) -> None:
    image_id = {"imageTag": tag}
    response: dict[str, Any] = (
        {
            "images": [
                {
                    "registryId": registry,
                    "repositoryName": repository,
                    "imageId": image_id,
                    "imageManifest": "{}",
                }
            ]
        }
        if exists
        else {"images": [], "failures": [{"imageId": image_id, "failureCode": "ImageNotFound"}]}
    )
    aws["ecr"].add_response(
        "batch_get_image",
        response,
        {"registryId": registry, "repositoryName": repository, "imageIds": [image_id]},
    )


def stack(aws: Clients, name: str, outputs: dict[str, str], status: str = "UPDATE_COMPLETE") -> None:
    aws["cloudformation"].add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": name,
                    "CreationTime": NOW,
                    "StackStatus": status,
                    "Outputs": [{"OutputKey": key, "OutputValue": value} for key, value in outputs.items()],
                }
            ]
        },
        {"StackName": name},
    )


def no_stack(aws: Clients, name: str, operation: str = "describe_stacks") -> None:
    aws["cloudformation"].add_client_error(
        operation,
        service_error_code="ValidationError",
        service_message=f"Stack with id {name} does not exist",
        expected_params={"StackName": name},
    )


def resource_policies(aws: Clients, names: list[str], *, pages: int = 1) -> None:
    """DescribeResourcePolicies (account scope) answering `names`, split over `pages` pages."""
    size = -(-len(names) // pages) if names else 0
    chunks = [names[i : i + size] for i in range(0, len(names), size)] if names else [[]]
    for index, chunk in enumerate(chunks):
        answer: dict[str, Any] = {"resourcePolicies": [{"policyName": name} for name in chunk]}
        params: dict[str, Any] = {"policyScope": "ACCOUNT"}
        if index:
            params["nextToken"] = f"page-{index}"
        if index < len(chunks) - 1:
            answer["nextToken"] = f"page-{index + 1}"
        aws["logs"].add_response("describe_resource_policies", answer, params)


def stack_resources(aws: Clients, name: str, policies: list[str]) -> None:
    def summary(logical_id: str, physical_id: str, resource_type: str) -> dict[str, Any]:
        return {
            "LogicalResourceId": logical_id,
            "PhysicalResourceId": physical_id,
            "ResourceType": resource_type,
            "LastUpdatedTimestamp": NOW,
            "ResourceStatus": "CREATE_COMPLETE",
        }

    summaries = [summary(f"P{i}", policy, "AWS::Logs::ResourcePolicy") for i, policy in enumerate(policies)]
    # Another resource type whose physical id matches an existing policy's name is not counted as ours.
    summaries.append(summary("Bucket", "p0", "AWS::S3::Bucket"))
    aws["cloudformation"].add_response(
        "list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": name}
    )


def deployed_endpoint(
    aws: Clients, instance_type: str, *, autoscaled: bool | None, variants: tuple[str, ...] = ("AllTraffic",)
) -> None:
    """The stack's endpoint on `instance_type`; `autoscaled` None: the check will not ask about scaling."""
    stack(aws, "TritonMultiModelEndpoint", {"EndpointName": ENDPOINT})
    aws["sagemaker"].add_response(
        "describe_endpoint",
        {
            "EndpointName": ENDPOINT,
            "EndpointArn": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint/{ENDPOINT.lower()}",
            "EndpointConfigName": "Config-1",
            "EndpointStatus": "InService",
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
        },
        {"EndpointName": ENDPOINT},
    )
    aws["sagemaker"].add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": "Config-1",
            "EndpointConfigArn": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint-config/config-1",
            "ProductionVariants": [{"VariantName": name, "InstanceType": instance_type} for name in variants],
            "CreationTime": NOW,
        },
        {"EndpointConfigName": "Config-1"},
    )
    targets = [
        {
            "ServiceNamespace": "sagemaker",
            "ResourceId": SCALING_RESOURCE,
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 5,
            "RoleARN": "arn:aws:iam::123456789012:role/scaling",
            "CreationTime": NOW,
        }
    ]
    if autoscaled is not None:
        aws["application_autoscaling"].add_response(
            "describe_scalable_targets",
            {"ScalableTargets": targets if autoscaled else []},
            {
                "ServiceNamespace": "sagemaker",
                "ResourceIds": [SCALING_RESOURCE],
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            },
        )


# --- region -----------------------------------------------------------------------------------------------


def test_region_passes_where_everything_exists_and_fails_naming_the_regions_that_work() -> None:
    assert check_region(REGION, None, [REGION]).line() == (
        "PASS region: eu-west-1 has the Triton image, the build image and GPU runners"
    )
    failed = check_region(
        "eu-north-1", "region=eu-north-1 has no CodeBuild GPU runners", ["eu-west-1", "us-east-1"]
    )
    assert failed.line() == (
        "FAIL region: region=eu-north-1 has no CodeBuild GPU runners; "
        "fix: deploy to one of: eu-west-1, us-east-1"
    )


# --- quotas -------------------------------------------------------------------------------------------------


WHY = "maxInstanceCount=5, plus 5 while a canary update runs a second fleet beside the first"


SHOWN_ENDPOINT = "'ml.g5.xlarge for endpoint usage' (L-1928E07B)"
SHOWN_GPU = "'Concurrently running builds for Linux GPU Small environment' (L-F1FE1B52)"


def test_the_platform_table_holds_the_real_quota_codes_and_names() -> None:
    assert endpoint_quota("ml.g5.xlarge") == ENDPOINT_QUOTA
    assert endpoint_quota("ml.g4dn.xlarge") == Quota(
        "sagemaker", "L-B67CFA0C", "ml.g4dn.xlarge for endpoint usage"
    )
    assert PLATFORM.codebuild_gpus["SMALL"].concurrency_quota == GPU_QUOTA
    assert PLATFORM.codebuild_gpus["LARGE"].concurrency_quota == Quota(
        "codebuild", "L-D906BEE7", "Concurrently running builds for Linux GPU Large environment"
    )


def test_endpoint_quota_passes_at_the_peak_of_an_update(aws: Clients) -> None:
    quota(aws, ENDPOINT_QUOTA, 10)
    result = check_endpoint_quota(aws.service_quotas, ENDPOINT_QUOTA, 10, WHY)
    assert result.ok and result.line() == f"PASS endpoint-quota: {SHOWN_ENDPOINT} is 10 (needs 10: {WHY})"


def test_endpoint_quota_below_the_peak_fails_with_the_increase_to_ask_for(aws: Clients) -> None:
    quota(aws, ENDPOINT_QUOTA, None, default=5)  # no applied value: the default counts
    result = check_endpoint_quota(aws.service_quotas, ENDPOINT_QUOTA, 10, WHY)
    assert result.line() == (
        f"FAIL endpoint-quota: {SHOWN_ENDPOINT} is 5, below the 10 instances the endpoints can run at once "
        f"({WHY}); fix: request at least 10 in Service Quotas (Amazon SageMaker, "
        "'ml.g5.xlarge for endpoint usage'), or lower maxInstanceCount (docs/updates.md: the strategies and "
        "the instances they add)"
    )


@pytest.mark.parametrize(
    ("overrides", "needed", "why"),
    [
        ({}, 10, WHY),
        (
            {"deployment_strategy": "rolling"},
            10,
            "maxInstanceCount=5, plus 5 while a rolling update adds a "
            "batch; its rollback brings the old instances back all at once",
        ),
        (
            {"deployment_strategy": "rolling", "deployment_rollback_batch_size": "1"},
            6,
            "maxInstanceCount=5, plus "
            "1 while a rolling update adds a batch; its rollback brings the old instances back 1 at a time",
        ),
        (
            {"autoscaling": False, "initial_instance_count": 3, "deployment_strategy": "linear"},
            6,
            "initialInstanceCount=3, plus 3 while a linear update runs a second fleet beside the first",
        ),
    ],
)
def test_the_quota_needed_counts_the_instances_an_update_adds(
    overrides: dict[str, Any], needed: int, why: str
) -> None:
    settings = Settings(**overrides)
    assert (settings.peak_update_instances, update_capacity(settings)) == (needed, why)


def test_endpoint_quota_missing_in_the_region_fails(aws: Clients) -> None:
    quota(aws, ENDPOINT_QUOTA, None)
    result = check_endpoint_quota(aws.service_quotas, ENDPOINT_QUOTA, 5, WHY)
    assert not result.ok
    assert (
        result.detail
        == "no sagemaker quota code L-1928E07B, 'ml.g5.xlarge for endpoint usage' in this region"
    )


def test_a_refused_quota_call_is_a_failed_check_naming_the_call(aws: Clients) -> None:
    aws["service_quotas"].add_client_error(
        "get_service_quota", service_error_code="AccessDeniedException", service_message="not allowed"
    )
    result = check_endpoint_quota(aws.service_quotas, ENDPOINT_QUOTA, 5, WHY)
    assert result.line() == (
        "FAIL endpoint-quota: AWS GetServiceQuota answered AccessDeniedException: not allowed; "
        "fix: let the credentials running preflight call GetServiceQuota (docs/first-deploy.md lists the "
        "read-only permissions)"
    )


def test_a_dedicated_catalog_adds_the_component_endpoints_instances_to_the_quota(aws: Clients) -> None:
    dedicated = {"source": "torchvision:resnet50", "weights": "random", "formats": ["onnx"],
                 "max_batch_size": 8, "placement": "dedicated"}  # fmt: skip
    catalog = parse_catalog(
        {"models": [{**dedicated, "name": "hot", "dedicated": {"copies": 1, "max_copies": 3}},
                    {**dedicated, "name": "warm", "dedicated": {"copies": 2, "max_copies": 4}}]},
        origin="test",
    )  # fmt: skip
    settings = Settings()
    needed, why = endpoint_instances(settings, catalog)
    # sum(max_copies) = 7 instances of one copy each; from one copy no whole copy is 5-50 %, so each
    # component updates all at once, with a second set of copies: 3 + 4 more
    assert needed == settings.peak_update_instances + 14
    assert why.endswith(
        "; and 14 on the component endpoint (the dedicated entries' max_copies, plus their updates)"
    )
    assert endpoint_instances(settings, None) == (settings.peak_update_instances, update_capacity(settings))
    quota(aws, ENDPOINT_QUOTA, needed - 1)
    assert not check_endpoint_quota(aws.service_quotas, ENDPOINT_QUOTA, needed, why).ok


def test_scale_to_zero_is_checked_at_the_deploy_region_where_the_catalog_asks_for_it() -> None:
    catalog = parse_catalog(
        {"models": [{"name": "hot", "source": "torchvision:resnet50", "weights": "random",
                     "formats": ["onnx"], "max_batch_size": 8, "placement": "dedicated",
                     "dedicated": {"min_copies": 0}}]},
        origin="test",
    )  # fmt: skip
    assert check_scale_to_zero("us-east-1", catalog).ok
    refused = check_scale_to_zero("eu-west-1", catalog)
    assert refused.line() == (
        "FAIL scale-to-zero: models 'hot' have dedicated.min_copies: 0, which scales the endpoint to zero "
        "instances (MinInstanceCount 0), known to be accepted only in us-east-1, not region=eu-west-1 "
        "(triton_mme/core/platform_data/inference_components.yaml); fix: min_copies 1 or more, or "
        "region=us-east-1"
    )


def test_codebuild_gpu_quota_passes_from_one_build(aws: Clients) -> None:
    quota(aws, GPU_QUOTA, 1)
    result = check_codebuild_gpu_quota(aws.service_quotas, GPU_QUOTA)
    assert result.ok and result.detail == f"{SHOWN_GPU} is 1 (needs 1)"


def test_a_quota_without_a_known_code_is_found_by_its_name_in_any_case(aws: Clients) -> None:
    by_name = Quota("codebuild", None, GPU_QUOTA.name)
    listed_quotas(aws, "codebuild", {"Concurrently running builds for Linux/Small environment": 20},
                  defaults={GPU_QUOTA.name.lower(): 2})  # fmt: skip
    result = check_codebuild_gpu_quota(aws.service_quotas, by_name, 2)
    assert result.ok and result.detail == f"'{GPU_QUOTA.name.lower()}' (L-00000000) is 2 (needs 2)"
    listed_quotas(aws, "codebuild", {}, defaults={})
    assert check_codebuild_gpu_quota(aws.service_quotas, by_name).detail == (
        f"no codebuild quota named '{GPU_QUOTA.name}' in this region"
    )


def test_codebuild_gpu_quota_below_the_runners_of_a_fanned_out_build_fails(aws: Clients) -> None:
    quota(aws, GPU_QUOTA, 3)
    result = check_codebuild_gpu_quota(aws.service_quotas, GPU_QUOTA, 8)
    assert not result.ok and "is 3, below buildRunners=8" in result.line()
    assert "request at least 8 in Service Quotas" in result.line()
    quota(aws, GPU_QUOTA, 8)
    assert check_codebuild_gpu_quota(aws.service_quotas, GPU_QUOTA, 8).ok


def test_codebuild_gpu_quota_of_zero_fails(aws: Clients) -> None:
    quota(aws, GPU_QUOTA, None, default=0)
    result = check_codebuild_gpu_quota(aws.service_quotas, GPU_QUOTA)
    assert result.line() == (
        f"FAIL codebuild-gpu-quota: {SHOWN_GPU} is 0: no GPU build can start; fix: request at least 1 in "
        f"Service Quotas (AWS CodeBuild, '{GPU_QUOTA.name}')"
    )


def test_codebuild_gpu_quota_missing_in_the_region_fails(aws: Clients) -> None:
    quota(aws, GPU_QUOTA, None)
    result = check_codebuild_gpu_quota(aws.service_quotas, GPU_QUOTA)
    assert not result.ok and result.detail.startswith("no codebuild quota code L-F1FE1B52")


# --- images -------------------------------------------------------------------------------------------------


def test_an_image_that_exists_passes(aws: Clients) -> None:
    image(aws, "763104351884", "sagemaker-tritonserver", "25.04-py3")
    result = check_image(
        aws.ecr, "triton-image", region=REGION, registry="763104351884",
        repository="sagemaker-tritonserver", tag="25.04-py3",
    )  # fmt: skip
    assert result.line() == (
        "PASS triton-image: 763104351884.dkr.ecr.eu-west-1/sagemaker-tritonserver:25.04-py3 exists"
    )


def test_a_missing_image_fails(aws: Clients) -> None:
    image(aws, "763104351884", "pytorch-training", "9.9.9", exists=False)
    result = check_image(
        aws.ecr,
        "build-image",
        region=REGION,
        registry="763104351884",
        repository="pytorch-training",
        tag="9.9.9",
    )
    assert result.line() == (
        "FAIL build-image: 763104351884.dkr.ecr.eu-west-1/pytorch-training:9.9.9 is not there "
        "(ImageNotFound); fix: choose a tag and region from docs/platform.md"
    )


def test_a_missing_repository_fails_naming_the_answer(aws: Clients) -> None:
    aws["ecr"].add_client_error(
        "batch_get_image",
        service_error_code="RepositoryNotFoundException",
        service_message="no such repository",
    )
    result = check_image(
        aws.ecr,
        "triton-image",
        region=REGION,
        registry="1",
        repository="sagemaker-tritonserver",
        tag="25.04-py3",
    )
    assert not result.ok and "RepositoryNotFoundException: no such repository" in result.detail


# --- CDK bootstrap ------------------------------------------------------------------------------------------


def test_a_recent_bootstrap_passes(aws: Clients) -> None:
    stack(aws, "CDKToolkit", {"BootstrapVersion": "28", "BucketName": "assets"})
    assert check_bootstrap(aws.cloudformation).line() == "PASS cdk-bootstrap: CDKToolkit version 28 (>= 6)"


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ({"outputs": {"BootstrapVersion": "5"}}, "bootstrap version 5 is older than the required 6"),
        (
            {"outputs": {"BootstrapVersion": "28"}, "status": "ROLLBACK_COMPLETE"},
            "CDKToolkit is ROLLBACK_COMPLETE",
        ),
        (None, "no CDKToolkit stack in this region"),
    ],
)
def test_an_old_broken_or_missing_bootstrap_fails_with_the_bootstrap_command(
    aws: Clients, answer: dict[str, Any] | None, detail: str
) -> None:
    if answer is None:
        no_stack(aws, "CDKToolkit")
    else:
        stack(aws, "CDKToolkit", answer["outputs"], answer.get("status", "UPDATE_COMPLETE"))
    result = check_bootstrap(aws.cloudformation)
    assert not result.ok and result.detail == detail
    assert result.fix is not None and "npx cdk bootstrap aws://<account>/<region>" in result.fix


# --- the deployed stack: an instanceType change on an autoscaled variant ------------------------------------


def change(aws: Clients, instance_type: str) -> Any:
    return check_instance_type_change(
        cloudformation=aws.cloudformation,
        sagemaker=aws.sagemaker,
        autoscaling=aws.application_autoscaling,
        stack_name="TritonMultiModelEndpoint",
        endpoint_output="EndpointName",
        variant_name="AllTraffic",
        instance_type=instance_type,
    )


def test_a_first_deployment_passes(aws: Clients) -> None:
    no_stack(aws, "TritonMultiModelEndpoint")
    assert change(aws, "ml.g5.2xlarge").line() == (
        "PASS instance-type-change: no deployed endpoint in stack TritonMultiModelEndpoint yet"
    )


def test_the_same_instance_type_passes_without_looking_at_scaling(aws: Clients) -> None:
    deployed_endpoint(aws, "ml.g5.xlarge", autoscaled=None)
    assert change(aws, "ml.g5.xlarge").ok


def test_a_new_type_on_a_variant_that_is_not_autoscaled_passes(aws: Clients) -> None:
    deployed_endpoint(aws, "ml.g4dn.xlarge", autoscaled=False)
    result = change(aws, "ml.g5.xlarge")
    assert result.ok and "moves from ml.g4dn.xlarge to ml.g5.xlarge" in result.detail


def test_a_new_type_on_an_autoscaled_variant_fails_with_the_two_deployments(aws: Clients) -> None:
    deployed_endpoint(aws, "ml.g4dn.xlarge", autoscaled=True)
    assert change(aws, "ml.g5.xlarge").line() == (
        f"FAIL instance-type-change: {ENDPOINT} would move from ml.g4dn.xlarge to ml.g5.xlarge while its "
        "variant is registered for autoscaling, which SageMaker refuses; fix: deploy twice: first "
        '`make deploy CONTEXT="-c autoscaling=false -c instanceType=ml.g4dn.xlarge"` '
        "(removes the scaling, keeps the type), then "
        '`make deploy CONTEXT="-c instanceType=ml.g5.xlarge"` (changes the type, scales again)'
    )


def variant(aws: Clients) -> Any:
    return check_variant_name(
        cloudformation=aws.cloudformation,
        sagemaker=aws.sagemaker,
        stack_name="TritonMultiModelEndpoint",
        endpoint_output="EndpointName",
        variant_name="AllTraffic",
    )


def test_the_deployed_variant_name_is_the_one_the_update_keeps(aws: Clients) -> None:
    deployed_endpoint(aws, "ml.g5.xlarge", autoscaled=None)
    assert variant(aws).line() == (
        f"PASS variant-name: {ENDPOINT} serves variant AllTraffic, which the update keeps"
    )


def test_another_variant_name_fails_because_sagemaker_would_not_guard_the_update(aws: Clients) -> None:
    deployed_endpoint(aws, "ml.g5.xlarge", autoscaled=None, variants=("Blue", "Green"))
    result = variant(aws)
    assert not result.ok
    assert result.detail == (
        f"{ENDPOINT} serves variants Blue, Green; the update's config has only AllTraffic, and SageMaker "
        "guards an update only when the variant name stays the same"
    )


# --- CloudWatch Logs resource policies --------------------------------------------------------------------

STACK = "TritonMultiModelEndpoint"


def logs_check(aws: Clients, *, defines: int = 1) -> Any:
    return check_logs_resource_policies(
        logs=aws.logs,
        cloudformation=aws.cloudformation,
        stack_name=STACK,
        stack_defines=defines,
        region=REGION,
    )


def test_a_first_deploy_with_room_for_its_policy_passes(aws: Clients) -> None:
    resource_policies(aws, [f"p{i}" for i in range(PLATFORM.limits.logs_resource_policy_limit.value - 1)])
    no_stack(aws, STACK, "list_stack_resources")
    result = logs_check(aws)
    assert result.ok
    assert result.detail.endswith("the stack adds 1 (the last free one)")


def test_a_first_deploy_past_the_limit_fails_counting_every_page(aws: Clients) -> None:
    resource_policies(
        aws, [f"p{i}" for i in range(PLATFORM.limits.logs_resource_policy_limit.value)], pages=2
    )
    no_stack(aws, STACK, "list_stack_resources")
    limit = PLATFORM.limits.logs_resource_policy_limit.value
    result = logs_check(aws)
    assert not result.ok
    assert result.line() == (
        f"FAIL logs-resource-policies: {limit} of {limit} "
        f"account-level CloudWatch Logs resource policies in {REGION}; the stack adds 1, 1 past the limit; "
        "fix: delete account-level resource policies no longer in use "
        "(`aws logs describe-resource-policies`, `aws logs delete-resource-policy --policy-name NAME`); "
        "the limit is per account and region"
    )


def test_a_deployed_stack_at_the_limit_adds_nothing_and_passes(aws: Clients) -> None:
    names = [f"p{i}" for i in range(PLATFORM.limits.logs_resource_policy_limit.value - 1)] + ["ours"]
    resource_policies(aws, names)
    stack_resources(aws, STACK, ["ours"])
    result = logs_check(aws)
    assert result.ok and result.detail.endswith("the stack adds 0")


def test_a_stack_whose_policy_is_gone_counts_it_again(aws: Clients) -> None:
    resource_policies(aws, [f"p{i}" for i in range(PLATFORM.limits.logs_resource_policy_limit.value)])
    stack_resources(aws, STACK, ["ours"])  # recorded by the stack, deleted outside it
    assert not logs_check(aws).ok


def test_a_refused_describe_resource_policies_names_the_call(aws: Clients) -> None:
    aws["logs"].add_client_error("describe_resource_policies", "AccessDeniedException", "not allowed")
    result = logs_check(aws)
    assert not result.ok and "DescribeResourcePolicies" in result.line()


def test_the_stack_defines_as_many_account_level_policies_as_preflight_counts(default_synth: Any) -> None:
    policies = [r for r in default_synth.resources.values() if r["Type"] == "AWS::Logs::ResourcePolicy"]
    assert len(policies) == ACCOUNT_LOGS_RESOURCE_POLICIES
    # Account-level: none names a log group as its resource (those count one per group, not against the 10).
    assert all("ResourceArn" not in policy["Properties"] for policy in policies)


# --- all checks, and the command ----------------------------------------------------------------------------


def everything_in_place(aws: Clients, *, gpu_builds: float = 1) -> None:
    stack(aws, "CDKToolkit", {"BootstrapVersion": "28"})
    quota(aws, ENDPOINT_QUOTA, 10)
    quota(aws, GPU_QUOTA, gpu_builds)
    image(aws, "763104351884", "sagemaker-tritonserver", "25.04-py3")
    image(aws, "763104351884", "pytorch-training", "2.8.0-gpu-py312-cu129-ubuntu22.04-ec2")
    resource_policies(aws, ["other-service-logs"])
    no_stack(aws, "TritonMultiModelEndpoint", "list_stack_resources")  # the resource-policy check
    no_stack(aws, "TritonMultiModelEndpoint")  # the instance-type check
    no_stack(aws, "TritonMultiModelEndpoint")  # the variant-name check


def test_run_preflight_runs_every_check_in_order(aws: Clients) -> None:
    everything_in_place(aws)
    results = run_preflight(Settings(), REGION, aws.preflight_clients())
    assert [(r.name, r.ok) for r in results] == [
        ("region", True),
        ("cdk-bootstrap", True),
        ("endpoint-quota", True),
        ("codebuild-gpu-quota", True),
        ("triton-image", True),
        ("build-image", True),
        ("logs-resource-policies", True),
        ("instance-type-change", True),
        ("variant-name", True),
    ]


def test_a_customer_key_is_checked_right_after_the_region(aws: Clients) -> None:
    everything_in_place(aws)
    aws["kms"].add_response(
        "describe_key",
        {"KeyMetadata": {"KeyId": "k", "KeyState": "Enabled", "KeyUsage": "ENCRYPT_DECRYPT",
                         "KeySpec": "SYMMETRIC_DEFAULT"}},
        {"KeyId": KEY_ARN},
    )  # fmt: skip
    aws["kms"].add_client_error("get_key_policy", "AccessDeniedException", "no kms:GetKeyPolicy")
    results = run_preflight(Settings(kms_key_arn=KEY_ARN), REGION, aws.preflight_clients())
    assert [(r.name, r.ok) for r in results][:3] == [
        ("region", True),
        ("kms-key", False),
        ("cdk-bootstrap", True),
    ]


def test_an_unusable_region_stops_before_any_aws_call(aws: Clients) -> None:
    results = run_preflight(Settings(), "eu-north-1", aws.preflight_clients())
    assert [(r.name, r.ok) for r in results] == [("region", False)]


def test_the_command_prints_one_line_per_check_and_exits_1_on_a_failure(
    aws: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    everything_in_place(aws, gpu_builds=0)
    aws.region_name = REGION  # type: ignore[attr-defined]
    assert app.preflight(["-c", f"region={REGION}"], session=aws) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11
    assert [line.split(" ", 2)[:2] for line in lines[:10]] == [
        ["PASS", "region:"],
        ["PASS", "checkpoints:"],  # the default catalog has none in S3
        ["PASS", "cdk-bootstrap:"],
        ["PASS", "endpoint-quota:"],
        ["FAIL", "codebuild-gpu-quota:"],
        ["PASS", "triton-image:"],
        ["PASS", "build-image:"],
        ["PASS", "logs-resource-policies:"],
        ["PASS", "instance-type-change:"],
        ["PASS", "variant-name:"],
    ]
    assert lines[1] == "PASS checkpoints: no S3 checkpoint in the catalog"
    assert lines[-1] == "preflight eu-west-1: 9 passed, 1 failed"


def test_the_command_exits_0_when_everything_passes(aws: Clients, capsys: pytest.CaptureFixture[str]) -> None:
    everything_in_place(aws)
    aws.region_name = None  # type: ignore[attr-defined]
    assert app.preflight(["-c", f"region={REGION}"], session=aws) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "preflight eu-west-1: 10 passed, 0 failed"


def test_the_command_refuses_bad_settings_and_a_missing_region_in_one_line(
    aws: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    assert app.preflight(["-c", "instanceType=ml.m5.xlarge"], session=aws) == 1
    assert capsys.readouterr().err.startswith("error: instanceType=ml.m5.xlarge is not a single-GPU type")
    aws.region_name = None  # type: ignore[attr-defined]
    assert app.preflight([], session=aws) == 1
    assert capsys.readouterr().err == (
        "error: no region; set region in cdk.json (or -c region=...) or AWS_DEFAULT_REGION\n"
    )


def test_project_context_layers_cdk_json_then_cdk_context_json_then_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "cdk.json").write_text(
        '{"app": "x", "context": {"instanceType": "a", "maxInstanceCount": 3}}'
    )
    (tmp_path / "cdk.context.json").write_text('{"instanceType": "b", "alarmEmail": "ops@example.com"}')
    context = app.project_context(["instanceType=c", "region=eu-west-1"], root=tmp_path)
    assert context == {
        "instanceType": "c",
        "maxInstanceCount": 3,
        "alarmEmail": "ops@example.com",
        "region": "eu-west-1",
    }
    with pytest.raises(app.SettingsError, match=r"^-c region is not a context value; allowed: -c key=value$"):
        app.project_context(["region"], root=tmp_path)


def test_the_command_refuses_an_unknown_context_key_naming_the_closest_setting(
    aws: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    assert app.preflight(["-c", "instanceTyp=ml.g5.2xlarge"], session=aws) == 1
    assert capsys.readouterr().err == (
        "error: unknown context key instanceTyp (cdk.json, cdk.context.json or -c); "
        "did you mean instanceType? allowed: a setting of docs/settings.md or a CDK feature flag "
        "(@aws-cdk/...)\n"
    )
