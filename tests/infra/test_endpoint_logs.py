"""The endpoint's log retention in a bare stack: the group SageMaker writes to gets the retention."""

from __future__ import annotations

import pytest
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Template
from synth_support import bare_stack, with_nag

from triton_mme_cdk.constructs.endpoint_logs import EndpointLogs


def logs_template(retention: logs.RetentionDays) -> tuple[Template, EndpointLogs]:
    stack = bare_stack()
    endpoint = sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_config_name="config")
    endpoint.override_logical_id("Endpoint")
    endpoint_logs = EndpointLogs(
        stack, "Logs", endpoint_name=endpoint.attr_endpoint_name, retention=retention
    )
    return with_nag(stack), endpoint_logs  # with_nag raises on any unacknowledged finding


@pytest.mark.parametrize(
    ("retention", "days"), [(logs.RetentionDays.ONE_MONTH, 30), (logs.RetentionDays.ONE_YEAR, 365)]
)
def test_the_endpoints_log_group_gets_the_retention(retention: logs.RetentionDays, days: int) -> None:
    template, endpoint_logs = logs_template(retention)
    group = {"Fn::Join": ["", ["/aws/sagemaker/Endpoints/", {"Fn::GetAtt": ["Endpoint", "EndpointName"]}]]}
    template.has_resource_properties("Custom::LogRetention", {"LogGroupName": group, "RetentionInDays": days})
    assert endpoint_logs.retention.node.scope is endpoint_logs
    assert template.find_resources("AWS::Logs::LogGroup") == {}, "SageMaker creates the group, not the stack"
