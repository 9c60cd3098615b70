"""What the deployed stack promised: its AcceptanceSettings output (triton_mme_cdk/acceptance_settings.py),
read back.

The stack resolves every reference (endpoint config and model names, alarm names, the image URI) into this
one JSON output at deploy time, so the run needs no settings file and no read of the template.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from triton_mme.core.bounded import load_json
from triton_mme.core.errors import UserError, describe_validation_error
from triton_mme.core.limits import MAX_REPLY_BYTES

# The stack output holding the settings; triton_mme_cdk/acceptance_settings.py writes it.
ACCEPTANCE_SETTINGS_OUTPUT = "AcceptanceSettings"
ROUTING_POLICY = "BlueGreenUpdatePolicy"
ROLLING_POLICY = "RollingUpdatePolicy"


class StackError(UserError, ValueError):
    """The stack cannot be checked (not deployed, or deployed without the output); one line."""


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Scaling(_Settings):
    service_namespace: str
    resource_id: str
    scalable_dimension: str
    min_capacity: int
    max_capacity: int
    policy_count: int


class DeployedComponent(_Settings):
    """One dedicated model's inference component, as the template created it."""

    name: str
    copy_count: int
    copy_range: tuple[int, int]
    scaled: bool
    alarm_name: str | None = None


class DeployedComponents(_Settings):
    """The inference component endpoint of a catalog's `placement: dedicated` entries."""

    endpoint_name: str
    endpoint_config_name: str
    variant_name: str
    instance_type: str
    # min, initial, max instances (ManagedInstanceScaling and the variant's initial count).
    instance_counts: dict[str, int]
    components: dict[str, DeployedComponent]


class DeployedSettings(_Settings):
    endpoint_name: str
    endpoint_config_name: str
    model_name: str
    variant_name: str
    instance_type: str
    initial_instance_count: int
    inference_ami_version: str | None = None
    network_isolation: bool
    image: str
    image_tag: str
    model_data_url: str
    live_manifest_url: str
    # CloudFormation's DeploymentConfig with its keys' first letters lowered (CDK's rendering).
    deployment_config: dict[str, Any] | None = None
    build_fingerprint: str
    # Absent in stacks deployed before the build engine's verdicts, which then do not run.
    build_state_machine_arn: str | None = None
    alarm_names: tuple[str, ...]
    scaling: Scaling | None = None
    deployment_event_log_group: str
    # Absent without dedicated entries (and in stacks deployed before inference components).
    inference_components: DeployedComponents | None = None

    @property
    def api_deployment_config(self) -> dict[str, Any] | None:
        """The deployment config as the SageMaker API spells it (DescribeEndpoint's LastDeploymentConfig)."""
        return _pascal(self.deployment_config) if self.deployment_config is not None else None

    @property
    def strategy(self) -> str:
        """CANARY, LINEAR or ALL_AT_ONCE (blue/green traffic routing), ROLLING, or ALL_AT_ONCE without one."""
        return deployment_strategy(self.api_deployment_config)


def deployment_strategy(config: dict[str, Any] | None) -> str:
    """The strategy a DeploymentConfig (API spelling) asks for."""
    if not config:
        return "ALL_AT_ONCE"
    if ROLLING_POLICY in config:
        return "ROLLING"
    routing = config.get(ROUTING_POLICY, {}).get("TrafficRoutingConfiguration", {})
    return str(routing.get("Type", "ALL_AT_ONCE"))


def _pascal(value: Any) -> Any:
    if isinstance(value, dict):
        return {key[:1].upper() + key[1:]: _pascal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_pascal(item) for item in value]
    return value


class StackFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stack_name: str
    settings: DeployedSettings

    @property
    def endpoint_name(self) -> str:
        return self.settings.endpoint_name

    @classmethod
    def from_outputs(cls, outputs: dict[str, str], *, stack_name: str) -> StackFacts:
        text = outputs.get(ACCEPTANCE_SETTINGS_OUTPUT)
        if text is None:
            raise StackError(
                f"stack {stack_name} has no {ACCEPTANCE_SETTINGS_OUTPUT} output; deploy this version of the "
                "stack first (`make deploy`)"
            )
        try:
            settings = DeployedSettings.model_validate(
                load_json(
                    text,
                    where=f"stack {stack_name} output {ACCEPTANCE_SETTINGS_OUTPUT}",
                    max_bytes=MAX_REPLY_BYTES,
                )
            )
        except ValidationError as error:
            where = f"stack {stack_name} output {ACCEPTANCE_SETTINGS_OUTPUT}"
            raise StackError(f"{where}: {describe_validation_error(error)}") from None
        except ValueError as error:
            raise StackError(
                f"stack {stack_name} output {ACCEPTANCE_SETTINGS_OUTPUT}: not JSON ({error})"
            ) from None
        return cls(stack_name=stack_name, settings=settings)

    @classmethod
    def read(cls, cloudformation: Any, stack_name: str) -> StackFacts:
        """DescribeStacks; StackError when the stack does not exist."""
        from botocore.exceptions import ClientError

        try:
            stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
        except ClientError as error:
            if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
                raise StackError(
                    f"no stack named {stack_name} in this account and region; pass --stack NAME "
                    "(and --region)"
                ) from None
            raise
        outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
        return cls.from_outputs(outputs, stack_name=stack_name)
