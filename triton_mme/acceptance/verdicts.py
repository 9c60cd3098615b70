"""First-deploy verdicts: facts no stored document settles, each answered by what the deployed stack shows
(docs/acceptance.md, "First-deploy verdicts", names the source that left each open). One check each; a fact
this deployment cannot show (no dedicated entries, no component at zero copies, no update yet) is CANNOT TELL.

- ami-honoured: whether a multi-model endpoint runs on the InferenceAmiVersion's driver (DLC issue #4990: a
  GPU MME on 25.04 failed on driver 470): the NVIDIA banner in the endpoint's log group.
- component-family, component-ami-scaling: whether components run on the instance family, and
  al2023-ami-sagemaker-inference-gpu-4-1 with managed instance scaling: the component endpoint and every
  component InService, as DescribeEndpointConfig shows them.
- component-metrics: the per-component metric and dimension the rollback alarms watch: ListMetrics.
- component-endpoint-update: UpdateEndpoint on an endpoint that hosts components: seen only after an update.
- no-capacity-error: the wording of InvokeEndpoint's answer while a component has no copy.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from triton_mme.acceptance.report import FIRST_DEPLOY, Check, cannot_tell, failed, passed
from triton_mme.acceptance.stack import DeployedComponents
from triton_mme.core.platform import PLATFORM

ENDPOINT_LOG_GROUP = "/aws/sagemaker/Endpoints/{endpoint}"
# What NVIDIA's container entry point prints: the driver it was built for, and, when the host's is older, that
# it "was detected" (with forward compatibility then ENABLED or UNAVAILABLE).
BUILT_FOR = "built for NVIDIA Driver Release"
OLDER_DRIVER = ("was detected", "Forward Compatibility mode ENABLED", "compatibility mode is UNAVAILABLE")
ROLLBACK_METRIC = "Invocation5XXErrors"
IN_SERVICE = "InService"


def check_ami_honoured(logs: Any, endpoint: str, ami: str | None) -> Check:
    """The endpoint's log shows the image's driver banner and no older driver detected."""
    expected = f"the multi-model endpoint runs on {ami or 'its platform'}'s driver, natively"
    group = ENDPOINT_LOG_GROUP.format(endpoint=endpoint)
    try:
        events = logs.filter_log_events(logGroupName=group, filterPattern='"NVIDIA Driver"', limit=50)[
            "events"
        ]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        events = []
    messages = [event.get("message", "") for event in events]
    older = next((m for m in messages if any(mark in m for mark in OLDER_DRIVER)), None)
    if older is not None:
        return failed(
            FIRST_DEPLOY,
            "ami-honoured",
            expected=expected,
            seen=f"{group}: {' '.join(older.split())[:200]}",
            fix="the endpoint did not get the AMI's driver: set inferenceAmiVersion explicitly, or a "
            "tritonImageTag the platform driver runs (docs/platform.md)",
        )
    banner = next((m for m in messages if BUILT_FOR in m), None)
    if banner is None:
        return cannot_tell(
            FIRST_DEPLOY,
            "ami-honoured",
            expected=expected,
            seen=f"no NVIDIA driver banner in {group}",
            why="the container's start-up lines are not in the log (yet): rerun after the first model loads",
        )
    return passed(FIRST_DEPLOY, "ami-honoured", expected=expected, seen=" ".join(banner.split())[:200])


def check_components_run(sagemaker: Any, components: DeployedComponents) -> list[Check]:
    """The component endpoint and each component InService: on its instance family, and with its AMI and
    managed instance scaling as configured."""
    family = components.instance_type.rsplit(".", 1)[0]
    endpoint = sagemaker.describe_endpoint(EndpointName=components.endpoint_name)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variant: dict[str, Any] = next(iter(config.get("ProductionVariants", [])), {})
    states = {
        component.name: sagemaker.describe_inference_component(InferenceComponentName=component.name).get(
            "InferenceComponentStatus"
        )
        for component in components.components.values()
    }
    down = {name: state for name, state in states.items() if state != IN_SERVICE}
    status = endpoint.get("EndpointStatus")
    ami = variant.get("InferenceAmiVersion")
    scaling = variant.get("ManagedInstanceScaling", {}).get("Status")
    family_expected = f"inference components run on {family} ({components.instance_type})"
    setup_expected = (
        f"{components.instance_type} with {ami or 'the platform AMI'} and managed instance scaling"
    )
    seen = f"endpoint {status}; components " + ", ".join(f"{n} {s}" for n, s in states.items())
    fix = (
        "read FailureReason in DescribeEndpoint / DescribeInferenceComponent; a family that cannot host "
        "components moves to inference_components.yaml's unknown list (docs/acceptance.md#first-deploy)"
    )
    if status != IN_SERVICE or down:
        return [
            failed(FIRST_DEPLOY, "component-family", expected=family_expected, seen=seen, fix=fix),
            failed(FIRST_DEPLOY, "component-ami-scaling", expected=setup_expected, seen=seen, fix=fix),
        ]
    return [
        passed(FIRST_DEPLOY, "component-family", expected=family_expected, seen=seen),
        passed(
            FIRST_DEPLOY,
            "component-ami-scaling",
            expected=setup_expected,
            seen=f"InService with InferenceAmiVersion {ami}, ManagedInstanceScaling {scaling}",
        ),
    ]


def check_component_metrics(cloudwatch: Any, components: DeployedComponents) -> Check:
    """Each component's rollback metric exists under the namespace and dimension its alarm watches."""
    metrics = PLATFORM.components.metrics
    expected = f"{ROLLBACK_METRIC} in {metrics.namespace} with dimension {metrics.dimension} per component"
    missing = [
        name
        for name in (component.name for component in components.components.values())
        if not cloudwatch.list_metrics(
            Namespace=PLATFORM.components.metrics.namespace,
            MetricName=ROLLBACK_METRIC,
            Dimensions=[{"Name": PLATFORM.components.metrics.dimension, "Value": name}],
        ).get("Metrics")
    ]
    if missing:
        return cannot_tell(
            FIRST_DEPLOY,
            "component-metrics",
            expected=expected,
            seen=f"ListMetrics finds none for {', '.join(missing)}",
            why="a metric is listed up to 15 minutes after its first datapoint: rerun then; if it is still "
            "missing, the rollback alarm watches a metric SageMaker does not publish "
            "(inference_components.yaml)",
        )
    return passed(FIRST_DEPLOY, "component-metrics", expected=expected, seen="listed for every component")


def check_component_endpoint_update(sagemaker: Any, components: DeployedComponents) -> Check:
    """An endpoint that hosts components took an UpdateEndpoint: it is InService on the stack's config and has
    changed since its creation. A first deployment has made none."""
    expected = "UpdateEndpoint on the component endpoint completes (InService on the stack's config)"
    endpoint = sagemaker.describe_endpoint(EndpointName=components.endpoint_name)
    status, config = endpoint.get("EndpointStatus"), endpoint.get("EndpointConfigName")
    updated = endpoint.get("LastModifiedTime") != endpoint.get("CreationTime")
    if not updated:
        return cannot_tell(
            FIRST_DEPLOY,
            "component-endpoint-update",
            expected=expected,
            seen=f"{status} on {config}, unchanged since its creation",
            why="only a deployment that changes the component endpoint's config calls UpdateEndpoint: rerun "
            "after one",
        )
    if status != IN_SERVICE or config != components.endpoint_config_name:
        return failed(
            FIRST_DEPLOY,
            "component-endpoint-update",
            expected=expected,
            seen=f"{status} on {config}, the stack's is {components.endpoint_config_name}",
            fix="read FailureReason in DescribeEndpoint; if SageMaker refuses UpdateEndpoint on an endpoint "
            "with components, a config change needs the components removed first (docs/acceptance.md)",
        )
    return passed(FIRST_DEPLOY, "component-endpoint-update", expected=expected, seen=f"InService on {config}")


def check_no_capacity_error(sagemaker: Any, runtime: Any, components: DeployedComponents) -> Check:
    """A component at zero copies answers the recorded code and message (which the client's line quotes)."""
    recorded = PLATFORM.components.no_capacity_error
    expected = f'{recorded.code} "{" ".join(recorded.message.split())[:60]}..."'
    for component in components.components.values():
        described = sagemaker.describe_inference_component(InferenceComponentName=component.name)
        if described.get("RuntimeConfig", {}).get("CurrentCopyCount", 1) != 0:
            continue
        try:
            runtime.invoke_endpoint(
                EndpointName=components.endpoint_name,
                InferenceComponentName=component.name,
                ContentType="application/json",
                Body=b"{}",
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            message = " ".join(str(error.response.get("Error", {}).get("Message", "")).split())
            if code == PLATFORM.components.no_capacity_error.code and message == " ".join(
                PLATFORM.components.no_capacity_error.message.split()
            ):
                return passed(
                    FIRST_DEPLOY, "no-capacity-error", expected=expected, seen=f"{component.name}: {code}"
                )
            return failed(
                FIRST_DEPLOY,
                "no-capacity-error",
                expected=expected,
                seen=f"{component.name}: {code} {message[:160]}",
                fix="record this answer in inference_components.yaml no_capacity_error (the client's line "
                "quotes it)",
            )
        return cannot_tell(
            FIRST_DEPLOY,
            "no-capacity-error",
            expected=expected,
            seen=f"{component.name} answered: a copy had started",
            why="rerun when a component has scaled in to zero copies",
        )
    return cannot_tell(
        FIRST_DEPLOY,
        "no-capacity-error",
        expected=expected,
        seen="no component is at zero copies",
        why="only a component with min_copies 0, scaled in, answers it: rerun then",
    )
