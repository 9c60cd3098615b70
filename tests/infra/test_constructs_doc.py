"""docs/constructs.md lists every prop of the public constructs and every field of the settings groups, with
the default the code has; every public prop documents its default (`@default`)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
from typing import Any

import pytest
from synth_support import REPO_ROOT

import triton_mme_cdk
from triton_mme_cdk import (
    AlarmThresholds,
    BuildRunnerSettings,
    EndpointSettings,
    GpuRunnerProps,
    ModelStoreProps,
    ScalingSettings,
    TritonMultiModelEndpointProps,
    UpdatePolicy,
)

PAGE = (REPO_ROOT / "docs" / "constructs.md").read_text()
PROPS = (TritonMultiModelEndpointProps, ModelStoreProps, GpuRunnerProps)
GROUPS = (EndpointSettings, ScalingSettings, AlarmThresholds, UpdatePolicy, BuildRunnerSettings)


def rows(section: str) -> list[list[str]]:
    """The table rows under `## <section>`, cells stripped of their backticks."""
    body = PAGE.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [
        [cell.strip().strip("`") for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in body.splitlines()
        if line.startswith("| ") and not line.startswith("| Prop") and not line.startswith("| Field")
    ]


def field_docs(cls: type) -> dict[str, str]:
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    return {
        node.target.id: " ".join(after.value.value.split())
        for node, after in itertools.pairwise(body)
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr)
    }


@pytest.mark.parametrize("props", PROPS, ids=lambda cls: cls.__name__)
def test_every_prop_is_documented_with_its_default_and_listed(props: Any) -> None:
    docs = field_docs(props)
    names = [field.name for field in dataclasses.fields(props)]
    assert all("@default - " in docs.get(name, "") for name in names), props
    listed = {row[0]: row[2] for row in rows(props.__name__)}
    assert list(listed) == names
    assert all(listed[name] == docs[name].split("@default - ")[1].strip() for name in names)


@pytest.mark.parametrize("group", GROUPS, ids=lambda cls: cls.__name__)
def test_every_settings_field_is_listed_with_its_key_and_default(group: Any) -> None:
    listed = {row[0]: (row[1], row[3]) for row in rows(group.__name__)}
    expected = {
        name: (field.alias, repr(getattr(field.default, "value", field.default)))
        for name, field in group.model_fields.items()
    }
    assert listed == expected


def test_the_public_names_are_exported() -> None:
    for name in triton_mme_cdk.__all__:
        assert getattr(triton_mme_cdk, name).__name__ == name
    with pytest.raises(AttributeError, match="has no attribute 'Stack'"):
        _ = triton_mme_cdk.Stack  # type: ignore[attr-defined]
