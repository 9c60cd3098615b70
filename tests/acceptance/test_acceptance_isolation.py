"""The cross-model isolation check: two models on the multi-model endpoint called B, A, B, A, each answering
its own golden data; a wrong model's answer, or B failing right after A's load, fails it."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from acceptance_support import (
    ENDPOINT,
    GOLDEN,
    FakeClock,
    invoke_params,
    publish_store,
    record,
    stubbed,
    triton_reply,
)
from store_support import BUCKET

from triton_mme.acceptance.serving import check_isolation, isolation_pair
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.golden import GoldenData
from triton_mme.core.locations import live_manifest_key
from triton_mme.core.manifest import Manifest
from triton_mme.core.naming import GOLDEN_ROLE, companion_file_name

OTHER_GOLDEN = GoldenData(
    inputs={"input": np.array([[0.9, 0.8, 0.7, 0.6]], dtype=np.float32)},
    outputs={"output": np.array([[7.0, 3.0]], dtype=np.float32)},
)


def two_models(s3: Any) -> tuple[Manifest, ManifestSource]:
    publish_store(s3)
    tiny = record()
    golden = OTHER_GOLDEN.to_bytes()
    other = tiny.model_copy(
        update={
            "name": "other",
            "target_model": "other-onnx-fedcba9876543210.tar.gz",
            "sha256": hashlib.sha256(b"another archive").hexdigest(),
            "files": {GOLDEN_ROLE: companion_file_name(GOLDEN_ROLE, hashlib.sha256(golden).hexdigest())},
        }
    )
    s3.put_object(Bucket=BUCKET, Key=f"manifests/{other.files[GOLDEN_ROLE]}", Body=golden)
    return Manifest(archives=(tiny, other)), ManifestSource(f"s3://{BUCKET}/{live_manifest_key()}", s3)


def answers(manifest: Manifest) -> dict[str, dict[str, np.ndarray]]:
    goldens = {"tiny": GOLDEN, "other": OTHER_GOLDEN}
    return {r.target_model: goldens[r.name].batch(1)[1] for r in manifest.archives}


def test_two_models_each_answering_their_own_golden_data_pass(s3: Any) -> None:
    manifest, source = two_models(s3)
    a, b = isolation_pair(manifest) or (None, None)
    assert a is not None and b is not None and a.name != b.name
    runtime, stubber = stubbed("sagemaker-runtime")
    replies = answers(manifest)
    for model in (b, a, b, a):
        stubber.add_response(
            "invoke_endpoint", triton_reply(replies[model.target_model]), invoke_params(model.target_model)
        )
    check = check_isolation(ENDPOINT, manifest, source, None, runtime, FakeClock().timing)
    assert check.passed, check.line()
    stubber.assert_no_pending_responses()
    assert check.seen.endswith("each answered its own golden data")


def test_a_request_naming_b_that_gets_as_answer_fails(s3: Any) -> None:
    manifest, source = two_models(s3)
    a, b = isolation_pair(manifest) or (None, None)
    assert a is not None and b is not None
    runtime, stubber = stubbed("sagemaker-runtime")
    replies = answers(manifest)
    for model, answer in ((b, b), (a, a), (b, a)):  # after A's load, the request naming B gets A's outputs
        stubber.add_response(
            "invoke_endpoint", triton_reply(replies[answer.target_model]), invoke_params(model.target_model)
        )
    check = check_isolation(ENDPOINT, manifest, source, None, runtime, FakeClock().timing)
    assert not check.passed and not check.cannot_tell
    assert check.seen.startswith(f"{b.target_model} (call 3 of 4, right after {a.name}'s): output 'output'")
    assert "docs/acceptance.md#cross-model-isolation" in (check.fix or "")


def test_b_failing_right_after_as_load_fails(s3: Any) -> None:
    manifest, source = two_models(s3)
    a, b = isolation_pair(manifest) or (None, None)
    assert a is not None and b is not None
    runtime, stubber = stubbed("sagemaker-runtime")
    replies = answers(manifest)
    for model in (b, a):
        stubber.add_response(
            "invoke_endpoint", triton_reply(replies[model.target_model]), invoke_params(model.target_model)
        )
    stubber.add_client_error(
        "invoke_endpoint",
        "ModelError",
        "Received server error (500)",
        424,
        expected_params=invoke_params(b.target_model),
    )
    check = check_isolation(ENDPOINT, manifest, source, None, runtime, FakeClock().timing)
    assert not check.passed and "call 3 of 4" in check.seen and "ModelError" in check.seen


def test_one_model_has_no_other_to_confuse_and_none_cannot_tell(s3: Any) -> None:
    store = publish_store(s3)
    source = ManifestSource(f"s3://{BUCKET}/{live_manifest_key()}", s3)
    check = check_isolation(ENDPOINT, store.manifest, source, None, None, FakeClock().timing)
    assert check.passed and check.seen == (
        "one model (tiny) on the multi-model endpoint: no other model's answer to get"
    )
    check = check_isolation(ENDPOINT, Manifest(archives=()), source, None, None, FakeClock().timing)
    assert check.cannot_tell and "no archive on the multi-model endpoint" in check.seen
