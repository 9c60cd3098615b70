"""Numbers in settings and context files are read within bounds: one line, never OverflowError,
RecursionError or int()'s digit limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triton_mme_cdk.context import project_context, settings_from
from triton_mme_cdk.settings import SettingsError


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"alarmDiskPercent": int("1" * 401)}, "is not a finite number; allowed: a number such as 60"),
        ({"alarmDiskPercent": "1" * 401}, "is not a finite number; allowed: a number such as 60"),
        (
            {"minInstanceCount": "9" * 5000},
            "is not a whole number; allowed: an integer such as 2, at most 18",
        ),
        (
            {"minInstanceCount": int("9" * 401)},
            "is not a whole number; allowed: an integer such as 2, at most 18",
        ),
        ({"minInstanceCount": "²"}, "minInstanceCount=² is not a whole number"),
        (
            {"deploymentStrategy": "canary", "deploymentCanarySize": "1" * 401 + "%"},
            "deploymentCanarySize=",
        ),
        (
            {"deploymentStrategy": "canary", "deploymentCanarySize": "9" * 5000},
            "deploymentCanarySize=",
        ),
    ],
)
def test_a_number_past_its_bounds_is_one_line(context: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as refused:
        settings_from(context)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_context_file_nested_200000_levels_deep_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cdk.context.json").write_text("[" * 200_000 + "]" * 200_000)

    with pytest.raises(
        SettingsError, match=r"^cdk.context.json: nested 200000 levels deep; allowed at most 64$"
    ):
        project_context([], tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("cdk.json", '{"context": ' + "{" * 100 + "}" * 100 + "}", r"^cdk.json: nested 101 levels deep"),
        ("cdk.json", '{"context": []}', r"^cdk.json: context is not a JSON object of context values$"),
        ("cdk.context.json", "[1]", r"^cdk.context.json: not a JSON object; allowed: an object of context"),
        ("cdk.context.json", "{", r"^cdk.context.json: not JSON \("),
    ],
)
def test_a_context_file_that_is_not_an_object_of_values_is_one_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)

    with pytest.raises(SettingsError, match=message):
        project_context([], tmp_path)


def test_a_context_file_within_bounds_is_read(tmp_path: Path) -> None:
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "x", "context": {"region": "eu-west-1"}}))

    assert project_context(["alarmDiskPercent=70"], tmp_path) == {
        "region": "eu-west-1",
        "alarmDiskPercent": "70",
    }
