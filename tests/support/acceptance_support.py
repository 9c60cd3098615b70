"""A deployed stack for the acceptance tests: its settings output, a model store in moto S3 with one archive,
its golden data, manifests and serving report, botocore Stubbers for the other services, and a clock that
advances only when the run sleeps."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

import boto3
import numpy as np
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from client_support import triton_binary_reply
from store_support import BUCKET

from triton_mme.acceptance.report import Check
from triton_mme.acceptance.stack import (
    ACCEPTANCE_SETTINGS_OUTPUT,
    DeployedComponent,
    DeployedComponents,
    DeployedSettings,
)
from triton_mme.acceptance.timing import Timing
from triton_mme.core.golden import GoldenData
from triton_mme.core.locations import build_manifest_key, live_manifest_key, serving_report_key
from triton_mme.core.manifest import ArchiveRecord, Manifest, TensorSpec
from triton_mme.core.naming import GOLDEN_ROLE, companion_file_name
from triton_mme.core.platform import PLATFORM
from triton_mme.core.serving_report import ArchiveServing, ServingReport

REGION = "us-east-1"
STACK = "TritonMultiModelEndpoint"
ENDPOINT = "TritonMultiModelEndpoint"
VARIANT = "AllTraffic"
CONFIG = "TritonConfig0D2E6D52-Ab12Cd34"
OLD_CONFIG = "TritonConfig0D2E6D52-Zz99Yy88"
MODEL = "TritonModel4CE37371-Ef56Gh78"
FINGERPRINT = "4d85d745ffc5a3c5ed426339ff964eb8cdfe83b754601b54a9e61233d5ad9a7b"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tritonserver:25.04-py3"
ALARMS = ("TritonMultiModelEndpoint-Errors5xx-1A2B", "TritonMultiModelEndpoint-ModelLatencyP99High-3C4D")
# The stack rolls updates back on the 5XX alarm alone (triton_mme_cdk/constructs/monitoring/monitoring.py).
ROLLBACK_ALARMS = ALARMS[:1]
EVENT_LOG_GROUP = "TritonMultiModelEndpoint-DeploymentEventsLogs9D73D72B-5E6F"
RESOURCE_ID = f"endpoint/{ENDPOINT}/variant/{VARIANT}"
BUILD_MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:ModelBuildEngineStateMachine-Ab12"
BUILD_RUN = BUILD_MACHINE.replace(":stateMachine:", ":execution:") + ":4d85d745-request"
START = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
CREATED = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
UPDATED = dt.datetime(2026, 12, 1, 11, 0, tzinfo=dt.UTC)


def deployment_config(strategy: str = "CANARY", bake_s: int = 600) -> dict[str, Any]:
    """A DeploymentConfig as the stack's output renders it (CDK's camelCase)."""
    step = {"canarySize": {"type": "INSTANCE_COUNT", "value": 1}} if strategy == "CANARY" else {}
    if strategy == "LINEAR":
        step = {"linearStepSize": {"type": "CAPACITY_PERCENT", "value": 50}}
    return {
        "autoRollbackConfiguration": {"alarms": [{"alarmName": name} for name in ROLLBACK_ALARMS]},
        "blueGreenUpdatePolicy": {
            "trafficRoutingConfiguration": {"type": strategy, **step, "waitIntervalInSeconds": bake_s},
            "maximumExecutionTimeoutInSeconds": 7200,
            "terminationWaitInSeconds": 0,
        },
    }


def settings_output(**overrides: Any) -> dict[str, Any]:
    """The AcceptanceSettings output of a deployed default stack."""
    output: dict[str, Any] = {
        "endpointName": ENDPOINT,
        "endpointConfigName": CONFIG,
        "modelName": MODEL,
        "variantName": VARIANT,
        "instanceType": "ml.g5.xlarge",
        "initialInstanceCount": 2,
        "inferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
        "networkIsolation": True,
        "image": IMAGE,
        "imageTag": "25.04-py3",
        "modelDataUrl": f"s3://{BUCKET}/models/",
        "liveManifestUrl": f"s3://{BUCKET}/{live_manifest_key()}",
        "deploymentConfig": deployment_config(),
        "buildFingerprint": FINGERPRINT,
        "buildStateMachineArn": BUILD_MACHINE,
        "alarmNames": list(ALARMS),
        "scaling": {
            "serviceNamespace": "sagemaker",
            "resourceId": RESOURCE_ID,
            "scalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "minCapacity": 2,
            "maxCapacity": 5,
            "policyCount": 1,
        },
        "deploymentEventLogGroup": EVENT_LOG_GROUP,
    }
    output.update(overrides)
    return output


def deployed(**overrides: Any) -> DeployedSettings:
    return DeployedSettings.model_validate(settings_output(**overrides))


# ----- the model store -----------------------------------------------------------------------------------

GOLDEN = GoldenData(
    inputs={"input": np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]], dtype=np.float32)},
    outputs={"output": np.array([[1.0, -1.0], [2.0, -2.0]], dtype=np.float32)},
)
ARCHIVE_BYTES = b"a tiny archive"


def record() -> ArchiveRecord:
    golden = GOLDEN.to_bytes()
    return ArchiveRecord(
        name="tiny",
        format="onnx",
        target_model="tiny-onnx-0123456789abcdef.tar.gz",
        sha256=hashlib.sha256(ARCHIVE_BYTES).hexdigest(),
        size_bytes=len(ARCHIVE_BYTES),
        source="test:tiny",
        weights="random",
        max_batch_size=8,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(4,)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(2,)),),
        files={GOLDEN_ROLE: companion_file_name(GOLDEN_ROLE, hashlib.sha256(golden).hexdigest())},
    )


@dataclass(frozen=True)
class Store:
    manifest: Manifest

    @property
    def archive(self) -> ArchiveRecord:
        return self.manifest.archives[0]


def publish_store(
    s3: Any,
    *,
    build_manifest: Manifest | None = None,
    report_passed: bool = True,
    with_report: bool = True,
    with_archive: bool = True,
) -> Store:
    """What a deployment leaves in the store: the archive, its golden data, the build's manifest, the live
    pointer (a copy of it), and the serving report of that manifest."""
    archive = record()
    manifest = Manifest(archives=(archive,))
    if with_archive:
        s3.put_object(Bucket=BUCKET, Key=f"models/{archive.target_model}", Body=ARCHIVE_BYTES)
    s3.put_object(Bucket=BUCKET, Key=f"manifests/{archive.files[GOLDEN_ROLE]}", Body=GOLDEN.to_bytes())
    s3.put_object(Bucket=BUCKET, Key=live_manifest_key(), Body=manifest.to_json().encode())
    built = build_manifest or manifest
    s3.put_object(Bucket=BUCKET, Key=build_manifest_key(FINGERPRINT), Body=built.to_json().encode())
    if with_report:
        checked = ArchiveServing(
            target_model=archive.target_model,
            name=archive.name,
            format=archive.format,
            passed=report_passed,
            error=None if report_passed else "Triton did not load it: bad config",
            tolerance={"atol": 2.5e-2, "rtol": 2.5e-2},
        )
        report = ServingReport(
            manifest_sha256=manifest.sha256,
            server="sagemaker-tritonserver:25.04-py3 on NVIDIA A10G, driver 580.95",
            archives=(checked,),
        )
        s3.put_object(Bucket=BUCKET, Key=serving_report_key(manifest.sha256), Body=report.to_json().encode())
    return Store(manifest)


# ----- stubbed services -----------------------------------------------------------------------------------


def stubbed(service: str) -> tuple[Any, Stubber]:
    client = boto3.client(
        service, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def triton_reply(outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """InvokeEndpoint's answer carrying Triton's binary reply."""
    content_type, body = triton_binary_reply(outputs, model_name="tiny")
    return {"ContentType": content_type, "Body": StreamingBody(BytesIO(body), len(body))}


def invoke_params(target_model: str) -> dict[str, Any]:
    return {"EndpointName": ENDPOINT, "TargetModel": target_model, "ContentType": ANY, "Body": ANY}


def expect_invocations(
    runtime: Stubber, target_model: str, *, not_ready: int = 0, shift: float = 0.0
) -> None:
    """`not_ready` ModelNotReadyException answers, then two replies (cold and warm) with the golden row 0's
    outputs, moved by `shift`."""
    for _ in range(not_ready):
        runtime.add_client_error(
            "invoke_endpoint",
            service_error_code="ModelNotReadyException",
            service_message="Model is not yet loaded",
            http_status_code=429,
            expected_params=invoke_params(target_model),
        )
    _, expected = GOLDEN.batch(1)
    for _ in range(2):
        reply = {name: value + np.float32(shift) for name, value in expected.items()}
        runtime.add_response("invoke_endpoint", triton_reply(reply), invoke_params(target_model))


def describe_endpoint_response(**overrides: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "EndpointName": ENDPOINT,
        "EndpointArn": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint/{ENDPOINT.lower()}",
        "EndpointConfigName": CONFIG,
        "ProductionVariants": [{"VariantName": VARIANT, "CurrentInstanceCount": 2}],
        "EndpointStatus": "InService",
        "CreationTime": CREATED,
        "LastModifiedTime": UPDATED,
        "LastDeploymentConfig": _pascal(deployment_config()),
    }
    response.update(overrides)
    return {key: value for key, value in response.items() if value is not None}


def _pascal(value: Any) -> Any:
    if isinstance(value, dict):
        return {key[:1].upper() + key[1:]: _pascal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_pascal(item) for item in value]
    return value


def describe_config_response(**variant: Any) -> dict[str, Any]:
    production = {
        "VariantName": VARIANT,
        "ModelName": MODEL,
        "InstanceType": "ml.g5.xlarge",
        "InitialInstanceCount": 2,
        "InitialVariantWeight": 1.0,
        "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
    }
    production.update(variant)
    return {
        "EndpointConfigName": CONFIG,
        "EndpointConfigArn": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint-config/{CONFIG.lower()}",
        "ProductionVariants": [production],
        "CreationTime": UPDATED - dt.timedelta(minutes=40),
    }


def describe_model_response(**container: Any) -> dict[str, Any]:
    primary = {"Image": IMAGE, "Mode": "MultiModel", "ModelDataUrl": f"s3://{BUCKET}/models/"}
    primary.update(container)
    return {
        "ModelName": MODEL,
        "PrimaryContainer": primary,
        "ExecutionRoleArn": "arn:aws:iam::123456789012:role/hosting",
        "CreationTime": UPDATED - dt.timedelta(minutes=40),
        "ModelArn": f"arn:aws:sagemaker:{REGION}:123456789012:model/{MODEL.lower()}",
        "EnableNetworkIsolation": True,
    }


def expect_describe(sagemaker: Stubber, *, endpoint: dict[str, Any] | None = None, **variant: Any) -> None:
    endpoint = endpoint or describe_endpoint_response()
    sagemaker.add_response("describe_endpoint", endpoint, {"EndpointName": ENDPOINT})
    config = describe_config_response(**variant) | {"EndpointConfigName": endpoint["EndpointConfigName"]}
    sagemaker.add_response(
        "describe_endpoint_config", config, {"EndpointConfigName": config["EndpointConfigName"]}
    )
    sagemaker.add_response("describe_model", describe_model_response(), {"ModelName": MODEL})


def deployment_event(status: str, message: str, config: str = CONFIG) -> dict[str, Any]:
    """One log event as the DeploymentEvents rule writes it: the EventBridge event, as JSON."""
    event = {
        "version": "0",
        "detail-type": "SageMaker Endpoint Deployment State Change",
        "source": "aws.sagemaker",
        "detail": {
            "EndpointName": ENDPOINT,
            "EndpointConfigName": OLD_CONFIG,
            "EndpointStatus": "UPDATING",
            "PendingDeploymentSummary": {
                "EndpointConfigName": config,
                "ProductionVariants": [
                    {"VariantName": VARIANT, "VariantStatus": [{"Status": status, "StatusMessage": message}]}
                ],
            },
        },
    }
    return {"logStreamName": "s", "timestamp": 1, "message": json.dumps(event), "eventId": "1"}


BAKING = (
    "Baking for 600 seconds (TerminationWaitInSeconds) with traffic enabled on {} capacity of {} instance(s)."
)
CANARY_EVENTS = [
    ("Creating", "Launching 2 instance(s)."),
    ("ActivatingTraffic", "Activating traffic on canary capacity of 1 instance(s)."),
    ("Baking", BAKING.format("canary", 1)),
    ("ActivatingTraffic", "Activating traffic on full capacity of 2 instance(s)."),
    ("Baking", BAKING.format("full", 2)),
]
ALL_AT_ONCE_EVENTS = [
    ("Creating", "Launching 2 instance(s)."),
    ("ActivatingTraffic", "Activating traffic on full capacity of 2 instance(s)."),
    ("Baking", BAKING.format("full", 2)),
]


def expect_record(logs: Stubber, created: dt.datetime = CREATED) -> None:
    """DescribeLogGroups' answer for the deployment-event log group, created with the stack by default."""
    group = {"logGroupName": EVENT_LOG_GROUP, "creationTime": int(created.timestamp() * 1000)}
    logs.add_response("describe_log_groups", {"logGroups": [group]}, {"logGroupNamePrefix": EVENT_LOG_GROUP})


def expect_events(logs: Stubber, stages: list[tuple[str, str]]) -> None:
    expect_record(logs)
    logs.add_response(
        "filter_log_events",
        {"events": [deployment_event(status, message) for status, message in stages]},
        {"logGroupName": EVENT_LOG_GROUP, "startTime": ANY},
    )


# What NVIDIA's entry point prints at the container's start when the host's driver is new enough.
DRIVER_BANNER = "This container image and its contents are built for NVIDIA Driver Release 575.51 or later."


def expect_driver_banner(logs: Stubber, messages: tuple[str, ...] = (DRIVER_BANNER,)) -> None:
    """FilterLogEvents on the endpoint's log group, answering the NVIDIA driver lines."""
    logs.add_response(
        "filter_log_events",
        {"events": [{"message": message, "timestamp": 0} for message in messages]},
        {
            "logGroupName": f"/aws/sagemaker/Endpoints/{ENDPOINT}",
            "filterPattern": '"NVIDIA Driver"',
            "limit": 50,
        },
    )


def metric_results(names: set[str]) -> dict[str, Any]:
    """GetMetricData's answer: one datapoint for each metric in `names`, none for the others."""
    from triton_mme.acceptance.metrics import REQUIRED_METRICS

    return {
        "MetricDataResults": [
            {
                "Id": f"m{index}",
                "Label": name,
                "Timestamps": [START] if name in names else [],
                "Values": [3.0] if name in names else [],
                "StatusCode": "Complete",
            }
            for index, name in enumerate(REQUIRED_METRICS)
        ]
    }


EVERY_METRIC = {
    "GPUUtilization",
    "GPUMemoryUtilization",
    "LoadedModelCount",
    "ModelCacheHit",
    "ModelLatency",
    "Invocations",
}


def alarm(name: str, *, state: str = "OK", actions: bool = True, endpoint: str = ENDPOINT) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "AlarmArn": f"arn:aws:cloudwatch:{REGION}:123456789012:alarm:{name}",
        "ActionsEnabled": True,
        "AlarmActions": [f"arn:aws:sns:{REGION}:123456789012:alarms"] if actions else [],
        "StateValue": state,
        "StateReason": "Threshold Crossed: 3 datapoints were greater than the threshold"
        if state == "ALARM"
        else "ok",
        "StateUpdatedTimestamp": START,
        "MetricName": "Invocation5XXErrors",
        "Namespace": PLATFORM.limits.metrics.invocation_namespace,
        "Dimensions": [
            {"Name": "EndpointName", "Value": endpoint},
            {"Name": "VariantName", "Value": VARIANT},
        ],
    }


def expect_alarms(cloudwatch: Stubber, alarms: list[dict[str, Any]]) -> None:
    cloudwatch.add_response("describe_alarms", {"MetricAlarms": alarms}, {"AlarmNames": list(ALARMS)})


def expect_scaling(autoscaling: Stubber, *, registered: bool = True, max_capacity: int = 5) -> None:
    where = {"ServiceNamespace": "sagemaker", "ScalableDimension": "sagemaker:variant:DesiredInstanceCount"}
    target = {
        **where,
        "ResourceId": RESOURCE_ID,
        "MinCapacity": 2,
        "MaxCapacity": max_capacity,
        "RoleARN": "arn:aws:iam::123456789012:role/scaling",
        "CreationTime": CREATED,
    }
    autoscaling.add_response(
        "describe_scalable_targets",
        {"ScalableTargets": [target] if registered else []},
        {"ResourceIds": [RESOURCE_ID], **where},
    )
    if not registered:
        return
    policy = {
        "PolicyARN": "arn:aws:autoscaling:policy/gpu",
        "PolicyName": "GpuUtilization",
        "PolicyType": "TargetTrackingScaling",
        "ResourceId": RESOURCE_ID,
        "CreationTime": CREATED,
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 60.0,
            "CustomizedMetricSpecification": {
                "MetricName": "GPUUtilization",
                "Namespace": PLATFORM.limits.metrics.instance_namespace,
                "Dimensions": [
                    {"Name": "EndpointName", "Value": ENDPOINT},
                    {"Name": "VariantName", "Value": VARIANT},
                ],
                "Statistic": "Average",
            },
        },
        **where,
    }
    autoscaling.add_response(
        "describe_scaling_policies", {"ScalingPolicies": [policy]}, {"ResourceId": RESOURCE_ID, **where}
    )


def expect_stack(cloudformation: Stubber, **overrides: Any) -> None:
    cloudformation.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": STACK,
                    "CreationTime": CREATED,
                    "StackStatus": "UPDATE_COMPLETE",
                    "Outputs": [
                        {"OutputKey": "EndpointName", "OutputValue": ENDPOINT},
                        {
                            "OutputKey": ACCEPTANCE_SETTINGS_OUTPUT,
                            "OutputValue": json.dumps(settings_output(**overrides)),
                        },
                    ],
                }
            ]
        },
        {"StackName": STACK},
    )


# ----- the clock ------------------------------------------------------------------------------------------


@dataclass
class FakeClock:
    """Time moves only when the run sleeps (or a test advances it): no test waits for real."""

    elapsed: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds

    def wall(self) -> dt.datetime:
        return START + dt.timedelta(seconds=self.elapsed)

    @property
    def timing(self) -> Timing:
        return Timing(now=self.now, sleep=self.sleep, wall=self.wall)


# ----- a whole run ----------------------------------------------------------------------------------------


def healthy_stack(s3: Any, *, not_ready: int = 2, events: list[tuple[str, str]] | None = None) -> Any:
    """Clients for a stack whose every check passes (or, with other `events`, whose update fell back)."""
    from triton_mme.acceptance.runner import AcceptanceClients

    store = publish_store(s3)
    cloudformation, cloudformation_stub = stubbed("cloudformation")
    expect_stack(cloudformation_stub)
    runtime, runtime_stub = stubbed("sagemaker-runtime")
    expect_invocations(runtime_stub, store.archive.target_model, not_ready=not_ready)
    sagemaker, sagemaker_stub = stubbed("sagemaker")
    expect_describe(sagemaker_stub)
    logs, logs_stub = stubbed("logs")
    expect_events(logs_stub, CANARY_EVENTS if events is None else events)
    expect_driver_banner(logs_stub)
    cloudwatch, cloudwatch_stub = stubbed("cloudwatch")
    query = {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY}
    cloudwatch_stub.add_response("get_metric_data", metric_results(EVERY_METRIC), query)
    expect_alarms(cloudwatch_stub, [alarm(name) for name in ALARMS])
    autoscaling, autoscaling_stub = stubbed("application-autoscaling")
    expect_scaling(autoscaling_stub)
    stepfunctions, stepfunctions_stub = stubbed("stepfunctions")
    expect_build_execution(stepfunctions_stub)
    return AcceptanceClients(
        cloudformation=cloudformation,
        sagemaker=sagemaker,
        runtime=runtime,
        s3=s3,
        cloudwatch=cloudwatch,
        autoscaling=autoscaling,
        logs=logs,
        stepfunctions=stepfunctions,
    )


def expect_build_execution(stepfunctions: Stubber) -> None:
    """The build engine's newest successful execution: a build batch."""
    run = {"executionArn": BUILD_RUN, "stateMachineArn": BUILD_MACHINE, "name": "4d85d745-request",
           "status": "SUCCEEDED", "startDate": UPDATED}  # fmt: skip
    expected = {"stateMachineArn": BUILD_MACHINE, "statusFilter": "SUCCEEDED", "maxResults": 1}
    stepfunctions.add_response("list_executions", {"executions": [run]}, expected)
    scheduled = {"resourceType": "codebuild", "resource": "startBuildBatch.sync", "region": REGION,
                 "parameters": "{}"}  # fmt: skip
    events = [
        {"timestamp": UPDATED, "type": "TaskScheduled", "id": 1, "taskScheduledEventDetails": scheduled}
    ]
    for index, (state, output) in enumerate((("ModelBuild", {}), ("ServingCheck", {})), 2):
        exited = {"name": state, "output": json.dumps(output)}
        events.append({"timestamp": UPDATED, "type": "TaskStateExited", "id": index,
                       "stateExitedEventDetails": exited})  # fmt: skip
    stepfunctions.add_response(
        "get_execution_history", {"events": events}, {"executionArn": BUILD_RUN, "maxResults": 1000}
    )


# ----- the inference component endpoint's first-deploy verdicts ----------------------------------------
DEPLOYED_COMPONENTS = DeployedComponents(
    endpoint_name="team-ic",
    endpoint_config_name="team-ic-config",
    variant_name="AllTraffic",
    instance_type="ml.g5.xlarge",
    instance_counts={"min": 0, "initial": 3, "max": 14},
    components={
        "resnet50": DeployedComponent(name="team-ic-resnet50", copy_count=1, copy_range=(0, 3), scaled=True),
        "mobilenet": DeployedComponent(
            name="team-ic-mobilenet", copy_count=2, copy_range=(1, 4), scaled=True
        ),
    },
)
COMPONENTS_CREATED = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def verdict(check: Check) -> str:
    """PASS, FAIL or CANNOT TELL, as the report's line starts."""
    return check.line().split(f" {check.group}/")[0]


def expect_component_endpoint(stub: Stubber, status: str = "InService", *, updated: bool = False) -> None:
    stub.add_response(
        "describe_endpoint",
        {
            "EndpointName": DEPLOYED_COMPONENTS.endpoint_name,
            "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/team-ic",
            "EndpointConfigName": DEPLOYED_COMPONENTS.endpoint_config_name,
            "EndpointStatus": status,
            "CreationTime": COMPONENTS_CREATED,
            "LastModifiedTime": COMPONENTS_CREATED + dt.timedelta(hours=1) if updated else COMPONENTS_CREATED,
        },
        {"EndpointName": DEPLOYED_COMPONENTS.endpoint_name},
    )


def expect_component_endpoint_config(stub: Stubber) -> None:
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g5.xlarge",
        "InitialInstanceCount": 3,
        "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 0, "MaxInstanceCount": 14},
    }
    stub.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": DEPLOYED_COMPONENTS.endpoint_config_name,
            "EndpointConfigArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint-config/team-ic-config",
            "ProductionVariants": [variant],
            "CreationTime": COMPONENTS_CREATED,
        },
        {"EndpointConfigName": DEPLOYED_COMPONENTS.endpoint_config_name},
    )


def expect_component(stub: Stubber, name: str, state: str = "InService", copies: int | None = None) -> None:
    described: dict[str, Any] = {
        "InferenceComponentName": name,
        "InferenceComponentArn": f"arn:aws:sagemaker:us-east-1:123456789012:inference-component/{name}",
        "EndpointName": DEPLOYED_COMPONENTS.endpoint_name,
        "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/team-ic",
        "CreationTime": COMPONENTS_CREATED,
        "LastModifiedTime": COMPONENTS_CREATED,
        "InferenceComponentStatus": state,
    }
    if copies is not None:
        described["RuntimeConfig"] = {"DesiredCopyCount": copies, "CurrentCopyCount": copies}
    stub.add_response("describe_inference_component", described, {"InferenceComponentName": name})
