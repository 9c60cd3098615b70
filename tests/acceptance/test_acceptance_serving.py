"""Check 1: every archive of the live manifest answers its golden data on the endpoint, within the serving
check's tolerance, with ModelNotReadyException retried inside SageMaker's loading window."""

from __future__ import annotations

from typing import Any
from unittest.mock import ANY

import pytest
from acceptance_support import ENDPOINT, FakeClock, expect_invocations, publish_store, stubbed
from store_support import BUCKET

from triton_mme.acceptance.serving import RETRY_INTERVAL_S, check_serving, tolerance_for
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.locations import live_manifest_key
from triton_mme.core.platform import PLATFORM
from triton_mme.core.tolerances import FP16, GPU_FP32


def run(s3: Any, runtime: Any, clock: FakeClock) -> Any:
    store = publish_store(s3)
    source = ManifestSource(f"s3://{BUCKET}/{live_manifest_key()}", s3)
    manifest = source.manifest()
    (check,) = check_serving(
        ENDPOINT, manifest, source, source.serving_report(manifest), runtime, clock.timing
    )
    assert store.archive.target_model in check.expected
    return check


def test_an_archive_that_answers_its_golden_data_passes_with_cold_and_warm_latency(s3: Any) -> None:
    runtime, stubber = stubbed("sagemaker-runtime")
    expect_invocations(stubber, "tiny-onnx-0123456789abcdef.tar.gz")
    check = run(s3, runtime, FakeClock())
    stubber.assert_no_pending_responses()
    assert check.passed, check.line()
    assert check.name == "tiny/onnx"
    assert {"cold_s", "warm_ms", "max_abs_error"} <= set(check.figures)
    assert check.figures["not_ready_retries"] == 0


def test_outputs_beyond_the_tolerance_fail_with_the_difference_and_the_fix(s3: Any) -> None:
    runtime, stubber = stubbed("sagemaker-runtime")
    expect_invocations(stubber, "tiny-onnx-0123456789abcdef.tar.gz", shift=0.5)
    check = run(s3, runtime, FakeClock())
    assert not check.passed
    assert "output 'output' differs from the reference by up to 0.5" in check.seen
    assert "InferenceAmiVersion" in (check.fix or "")
    assert check.line().startswith("FAIL serving/tiny/onnx: expected ")


def test_model_not_ready_is_retried_while_the_model_loads(s3: Any) -> None:
    runtime, stubber = stubbed("sagemaker-runtime")
    expect_invocations(stubber, "tiny-onnx-0123456789abcdef.tar.gz", not_ready=3)
    clock = FakeClock()
    check = run(s3, runtime, clock)
    assert check.passed, check.line()
    assert check.figures["not_ready_retries"] == 3
    assert clock.sleeps == [RETRY_INTERVAL_S] * 3
    assert check.figures["cold_s"] == pytest.approx(3 * RETRY_INTERVAL_S)


def test_model_not_ready_past_the_documented_loading_window_fails(s3: Any) -> None:
    runtime, stubber = stubbed("sagemaker-runtime")
    attempts = int(PLATFORM.limits.model_loading_limit_seconds.value / RETRY_INTERVAL_S) + 1
    expect_invocations(stubber, "tiny-onnx-0123456789abcdef.tar.gz", not_ready=attempts)
    clock = FakeClock()
    check = run(s3, runtime, clock)
    assert not check.passed
    assert check.seen.startswith("still ModelNotReadyException after 360 s")
    assert sum(clock.sleeps) <= PLATFORM.limits.model_loading_limit_seconds.value
    assert f"up to {PLATFORM.limits.model_loading_limit_seconds.value} s" in (check.fix or "")


def test_a_load_error_fails_with_sagemakers_line(s3: Any) -> None:
    runtime, stubber = stubbed("sagemaker-runtime")
    stubber.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="Received client error (400) from primary: failed to load model",
        http_status_code=424,
    )
    check = run(s3, runtime, FakeClock())
    assert not check.passed
    assert "ModelError" in check.seen and "failed to load model" in check.seen
    assert "network isolation" in (check.fix or "")


def test_the_tolerance_is_the_serving_checks_else_the_formats_gpu_one() -> None:
    from acceptance_support import record

    from triton_mme.core.serving_report import ArchiveServing, ServingReport

    archive = record()
    checked = ArchiveServing(
        target_model=archive.target_model,
        name="tiny",
        format="onnx",
        passed=True,
        tolerance={"atol": 0.05, "rtol": 0.05},
    )
    report = ServingReport(manifest_sha256="a" * 64, server="s", archives=(checked,))
    assert tolerance_for(archive, report) == FP16
    assert tolerance_for(archive, None) == GPU_FP32
    plan = archive.model_copy(update={"format": "tensorrt", "details": {"precision": "fp16"}})
    assert tolerance_for(plan, None) == FP16


def _dedicated_run(s3: Any, runtime: Any, component_endpoint: str | None) -> Any:
    from triton_mme.core.manifest import ComponentPlacement, Manifest

    publish_store(s3)
    source = ManifestSource(f"s3://{BUCKET}/{live_manifest_key()}", s3)
    manifest = source.manifest()
    placed = Manifest(
        archives=tuple(a.model_copy(update={"placement": ComponentPlacement()}) for a in manifest.archives)
    )
    (check,) = check_serving(
        ENDPOINT,
        placed,
        source,
        source.serving_report(manifest),
        runtime,
        FakeClock().timing,
        component_endpoint=component_endpoint,
    )
    return check


def test_a_dedicated_archive_is_called_by_its_component_on_the_component_endpoint(s3: Any) -> None:
    from acceptance_support import GOLDEN, triton_reply

    from triton_mme.core.naming import inference_component_name

    runtime, stubber = stubbed("sagemaker-runtime")
    _, expected = GOLDEN.batch(1)
    routing = {
        "EndpointName": "stack-ic",
        "InferenceComponentName": inference_component_name("stack-ic", "tiny"),
    }
    for _ in range(2):
        stubber.add_response(
            "invoke_endpoint", triton_reply(expected), {**routing, "ContentType": ANY, "Body": ANY}
        )
    check = _dedicated_run(s3, runtime, "stack-ic")
    stubber.assert_no_pending_responses()
    assert check.passed, check.line()


def test_a_dedicated_archive_without_a_component_endpoint_fails_with_the_fix(s3: Any) -> None:
    runtime, _ = stubbed("sagemaker-runtime")
    check = _dedicated_run(s3, runtime, None)
    assert not check.passed
    assert "places it on an inference component, but the stack promises no inference-component endpoint" in (
        check.seen
    )
    assert "docs/placement.md" in (check.fix or "")
