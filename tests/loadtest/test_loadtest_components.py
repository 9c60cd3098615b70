"""A load test sends each archive where the manifest places it: TargetModel on the multi-model endpoint,
InferenceComponentName on the inference-component endpoint (botocore's Stubber checks the parameters); an
endpoint the traffic needs and was not given is one line before anything is sent."""

from __future__ import annotations

import io
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from planner_support import manifest_of

from triton_mme.core.manifest import ComponentPlacement, Manifest
from triton_mme.core.naming import LOCAL_COMPONENT_ENDPOINT, inference_component_name
from triton_mme.loadtest.requests import RequestPlan, request_plan
from triton_mme.loadtest.targets import (
    LocalSession,
    LocalTarget,
    SageMakerSession,
    SageMakerTarget,
    TargetError,
)
from triton_mme.planner.traffic import parse_traffic, workload


def _plan(dedicated: set[int]) -> RequestPlan:
    manifest = manifest_of(3)
    archives = tuple(
        a.model_copy(update={"placement": ComponentPlacement()}) if i in dedicated else a
        for i, a in enumerate(manifest.archives)
    )
    traffic = parse_traffic({"zipf": {"total_rate_per_s": 3, "exponent": 1.0}, "service_ms": 5})
    return request_plan(workload(traffic, Manifest(archives=archives)))


def _client() -> Any:
    return boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def test_each_archive_is_invoked_on_its_own_endpoint_by_its_own_parameter() -> None:
    plan = _plan({0})
    target = SageMakerTarget("mme", plan, "us-east-1", 5.0, component_endpoint="components")
    client = _client()
    with Stubber(client) as stubber:
        for record in plan.records:
            component = inference_component_name("components", record.name) if record.is_dedicated else None
            routing = (
                {"EndpointName": "mme", "TargetModel": record.target_model}
                if component is None
                else {"EndpointName": "components", "InferenceComponentName": component}
            )
            stubber.add_response(
                "invoke_endpoint",
                {"Body": StreamingBody(io.BytesIO(b"{}"), 2), "ContentType": "application/json"},
                expected_params={**routing, "ContentType": ANY, "Body": ANY},
            )
        session = SageMakerSession(target, client)
        kinds = [session.send(index).kind for index in range(len(plan.records))]
        stubber.assert_no_pending_responses()
    assert kinds == ["ok"] * 3
    assert sum(r.is_dedicated for r in plan.records) == 1


@pytest.mark.parametrize(
    ("endpoint", "components", "dedicated", "message"),
    [
        ("mme", None, {1}, r"^the traffic calls 1 archive on inference components \(e\.g\. m0001-onnx-"),
        (
            None,
            "components",
            {1},
            r"^the traffic calls models on the multi-model endpoint: pass --endpoint NAME",
        ),
    ],
)
def test_a_missing_endpoint_is_one_line(
    endpoint: str | None, components: str | None, dedicated: set[int], message: str
) -> None:
    with pytest.raises(TargetError, match=message):
        SageMakerTarget(endpoint, _plan(dedicated), "us-east-1", 5.0, component_endpoint=components)


def test_an_all_dedicated_traffic_needs_no_multi_model_endpoint() -> None:
    target = SageMakerTarget(None, _plan({0, 1, 2}), "us-east-1", 5.0, component_endpoint="components")
    assert {endpoint for endpoint, _ in target.calls()} == {"components"}


def test_the_local_session_posts_to_the_component_stand_in_route() -> None:
    plan = _plan({2})
    session = LocalSession(LocalTarget("http://127.0.0.1:9", plan, 1.0))
    try:
        component = inference_component_name(LOCAL_COMPONENT_ENDPOINT, plan.records[2].name)
        assert session.paths[2] == f"/inference-components/{component}/invoke"
        assert session.paths[0] == f"/models/{plan.records[0].target_model}/invoke"
    finally:
        session.close()
