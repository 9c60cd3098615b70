"""Check 2, the endpoint is what the template says: DescribeEndpoint, DescribeEndpointConfig and DescribeModel
against the stack's AcceptanceSettings."""

from __future__ import annotations

from typing import Any

from triton_mme.acceptance.live import LiveEndpoint
from triton_mme.acceptance.report import TEMPLATE, Check, compared, failed, passed
from triton_mme.acceptance.stack import ROLLING_POLICY, ROUTING_POLICY, DeployedSettings, deployment_strategy

MULTI_MODEL_MODE = "MultiModel"
DRIFT_FIX = (
    "the live endpoint is not what the stack deployed: find who changed it (CloudTrail UpdateEndpoint, "
    "UpdateEndpointWeightsAndCapacities), then `make deploy` again (docs/acceptance.md#template)"
)
ROLLBACK_FIX = (
    "SageMaker rolled the last update back or someone updated the endpoint outside the stack: read the "
    "endpoint's FailureReason and the deployment events, fix the cause, then `make deploy` "
    "(docs/acceptance.md#template)"
)


def describe_deployment(config: dict[str, Any] | None) -> str:
    """A DeploymentConfig (API spelling) in one comparable phrase: strategy, step, bake time, alarms."""
    strategy = deployment_strategy(config)
    if not config:
        return "ALL_AT_ONCE, no rollback alarms"
    alarms = sorted(a["AlarmName"] for a in config.get("AutoRollbackConfiguration", {}).get("Alarms", []))
    if strategy == "ROLLING":
        policy = config[ROLLING_POLICY]
        step, wait = _size(policy.get("MaximumBatchSize")), policy.get("WaitIntervalInSeconds")
    else:
        routing = config.get(ROUTING_POLICY, {}).get("TrafficRoutingConfiguration", {})
        step = _size(routing.get("CanarySize") or routing.get("LinearStepSize"))
        wait = routing.get("WaitIntervalInSeconds")
    parts = [strategy] + ([f"step {step}"] if step else []) + ([f"bake {wait} s"] if wait is not None else [])
    return f"{', '.join(parts)}, rollback on {', '.join(alarms) if alarms else 'no alarms'}"


def _size(size: dict[str, Any] | None) -> str | None:
    if not size:
        return None
    unit = "%" if size.get("Type") == "CAPACITY_PERCENT" else " instance(s)"
    return f"{size.get('Value')}{unit}"


def check_template(settings: DeployedSettings, live: LiveEndpoint) -> list[Check]:
    endpoint = live.endpoint
    checks = [
        compared(
            TEMPLATE,
            "endpoint-status",
            expected="InService",
            seen=endpoint.get("EndpointStatus"),
            fix="wait for the update to end, or read the endpoint's FailureReason "
            "(docs/acceptance.md#template)",
        ),
        compared(
            TEMPLATE,
            "endpoint-config",
            expected=settings.endpoint_config_name,
            seen=endpoint.get("EndpointConfigName"),
            fix=ROLLBACK_FIX,
        ),
        compared(
            TEMPLATE,
            "deployment-config",
            expected=describe_deployment(settings.api_deployment_config),
            seen=describe_deployment(endpoint.get("LastDeploymentConfig")),
            fix=DRIFT_FIX,
        ),
    ]
    variant = live.variant(settings.variant_name)
    names = [v.get("VariantName") for v in live.variants]
    if variant is None or len(names) != 1:
        checks.append(
            failed(
                TEMPLATE,
                "variant-name",
                expected=f"one variant, {settings.variant_name}",
                seen=f"variants {names}",
                fix=DRIFT_FIX,
            )
        )
        return checks
    checks.append(
        passed(TEMPLATE, "variant-name", expected=settings.variant_name, seen=settings.variant_name)
    )
    for name, expected, seen in (
        ("instance-type", settings.instance_type, variant.get("InstanceType")),
        ("instance-count", settings.initial_instance_count, variant.get("InitialInstanceCount")),
        ("inference-ami", settings.inference_ami_version, variant.get("InferenceAmiVersion")),
    ):
        checks.append(compared(TEMPLATE, name, expected=expected, seen=seen, fix=DRIFT_FIX))
    checks += _model_checks(settings, live.model)
    return checks


def _model_checks(settings: DeployedSettings, model: dict[str, Any] | None) -> list[Check]:
    if model is None:
        return [
            failed(
                TEMPLATE,
                "model",
                expected=settings.model_name,
                seen="no model",
                fix=DRIFT_FIX,
            )
        ]
    container = model.get("PrimaryContainer", {})
    image = str(container.get("Image", ""))
    return [
        compared(
            TEMPLATE, "model", expected=settings.model_name, seen=model.get("ModelName"), fix=ROLLBACK_FIX
        ),
        compared(TEMPLATE, "image", expected=settings.image, seen=image, fix=DRIFT_FIX),
        compared(
            TEMPLATE, "image-tag", expected=settings.image_tag, seen=image.rpartition(":")[2], fix=DRIFT_FIX
        ),
        compared(TEMPLATE, "mode", expected=MULTI_MODEL_MODE, seen=container.get("Mode"), fix=DRIFT_FIX),
        compared(
            TEMPLATE,
            "data-prefix",
            expected=settings.model_data_url,
            seen=container.get("ModelDataUrl"),
            fix=DRIFT_FIX,
        ),
        compared(
            TEMPLATE,
            "network-isolation",
            expected=settings.network_isolation,
            seen=bool(model.get("EnableNetworkIsolation", False)),
            fix=DRIFT_FIX,
        ),
    ]
