"""Unknown context keys: settings and the CDK's own keys pass, anything else is refused with the closest
setting."""

from __future__ import annotations

import pytest
from synth_support import CDK_JSON_CONTEXT

from triton_mme_cdk.context_keys import unknown_context_problem
from triton_mme_cdk.settings import CONTEXT_KEYS


def test_every_setting_and_every_cdk_json_flag_is_known() -> None:
    assert unknown_context_problem([*CONTEXT_KEYS, *CDK_JSON_CONTEXT]) is None


@pytest.mark.parametrize(
    "key",
    [
        # What the CDK CLI passes on every synth (read from CDK_CONTEXT_JSON under `cdk synth`).
        "aws:cdk:bundling-stacks",
        "aws:cdk:enable-asset-metadata",
        "aws:cdk:enable-path-metadata",
        "aws:cdk:version-reporting",
        "aws-cdk:enableDiffNoFail",
        # cdk.context.json: cached lookups and `cdk acknowledge`.
        "availability-zones:account=123456789012:region=eu-west-1",
        "acknowledged-issue-numbers",
        "@aws-cdk/aws-s3:someFutureFlag",
    ],
)
def test_the_cdks_own_keys_pass(key: str) -> None:
    assert unknown_context_problem([key, "instanceType"]) is None


@pytest.mark.parametrize(
    ("key", "closest"),
    [
        ("instanceTyp", "instanceType"),
        ("instancetype", "instanceType"),
        ("minInstances", "minInstanceCount"),
        ("kmsKeyARN", "kmsKeyArn"),
    ],
)
def test_a_typo_is_refused_with_the_closest_setting(key: str, closest: str) -> None:
    assert unknown_context_problem(["region", key]) == (
        f"unknown context key {key} (cdk.json, cdk.context.json or -c); did you mean {closest}? "
        "allowed: a setting of docs/settings.md or a CDK feature flag (@aws-cdk/...)"
    )


def test_a_key_like_no_setting_is_refused_without_a_guess() -> None:
    assert unknown_context_problem(["zzz"]) == (
        "unknown context key zzz (cdk.json, cdk.context.json or -c); allowed: a setting of docs/settings.md "
        "or a CDK feature flag (@aws-cdk/...)"
    )
