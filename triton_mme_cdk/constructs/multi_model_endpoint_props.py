"""The props of TritonMultiModelEndpoint and `validate`, the rules across them, in the props' own names.

An embedder's app loads its catalog once (`load_build_catalog`), writes the props and may call `validate` to
see a problem before it builds anything; the construct calls it as well. This project's app calls the same
rules (`checked`) in its composition, where the messages keep the cdk.json keys its users write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace

from aws_cdk import aws_kms as kms

from triton_mme.catalog import Catalog
from triton_mme_cdk.catalog_files import CatalogFiles
from triton_mme_cdk.settings import (
    AlarmThresholds,
    BuildRunnerSettings,
    EndpointSettings,
    ScalingSettings,
    Settings,
    SettingsError,
    UpdatePolicy,
)
from triton_mme_cdk.settings.build_target import check_build_target, resolve_build_runners
from triton_mme_cdk.settings.placement_rules import dedicated_problem


@dataclass(frozen=True, kw_only=True)
class TritonMultiModelEndpointProps:
    """The props of a TritonMultiModelEndpoint.

    The groups are the app's settings groups (triton_mme_cdk.settings), in their Python field names, each
    field with the default of its cdk.json key in docs/settings.md; `validate` checks them together with the
    catalog (the GPU, driver and build runner against the Triton tag, the update steps against the fleet).
    """

    catalog: Catalog
    """The model catalog, validated and its checkpoints pinned: the first value of `load_build_catalog(path)`.

    @default - required
    """

    catalog_files: CatalogFiles
    """The catalog's file and the local files its build reads, shipped in the build runner's source: the
    second value of `load_build_catalog(path)`.

    @default - required
    """

    endpoint_name: str | None = None
    """The SageMaker endpoint's name; fixed, since the alarms that guard its updates watch it by name.

    @default - the stack's name
    """

    dedicated_endpoint_name: str | None = None
    """The name of the endpoint that hosts the catalog's `placement: dedicated` entries as inference
    components; fixed, like the endpoint's. Unused when the catalog has none (then no such endpoint exists).

    @default - the endpoint's name followed by -ic
    """

    endpoint: EndpointSettings = field(default_factory=EndpointSettings)
    """Instance type, Triton image tag, inference AMI, network isolation, endpoint log retention.

    @default - ml.g5.xlarge, the default Triton tag of the platform table, `auto` AMI, isolated, 30 days
    """

    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    """Instance counts and target tracking on GPU utilization (and optionally invocations).

    @default - 2 instances, autoscaling 2..5 at 60 % GPU utilization
    """

    alarms: AlarmThresholds = field(default_factory=AlarmThresholds)
    """Alarm thresholds, evaluation window and the optional email subscriber of the alarm topic.

    @default - the thresholds of docs/settings.md, no email subscription
    """

    updates: UpdatePolicy = field(default_factory=UpdatePolicy)
    """How an endpoint update moves traffic and when it rolls back.

    @default - a one-instance canary, 600 s baking, 7200 s timeout
    """

    build: BuildRunnerSettings = field(default_factory=BuildRunnerSettings)
    """The GPU CodeBuild runners of the build and the serving check: size, timeouts, log retention.

    @default - SMALL (A10G), 30 min build, 15 min check, 5 min queue, 30 days of logs
    """

    encryption_key: kms.IKey | None = None
    """A customer managed key for the model bucket, the build runners and (where the instance type allows)
    the endpoint's volume.

    @default - no customer key: SSE-S3 for the bucket, AWS managed keys elsewhere
    """


def validate(props: TritonMultiModelEndpointProps) -> TritonMultiModelEndpointProps:
    """The props checked together and against their catalog; raises SettingsError (a ValueError) or
    CatalogError, one line naming the props as written (`scaling.min_instance_count`), for a combination that
    cannot deploy. Returns the props with `build.runners` decided where it was not given: the fewest runners
    on which the catalog's build and serving check fit their timeouts."""
    with in_prop_names():
        return checked(props)


def checked(props: TritonMultiModelEndpointProps) -> TritonMultiModelEndpointProps:
    """`validate`'s rules, their messages in the cdk.json keys of the app's settings."""
    settings = Settings(
        **({"stack_name": props.endpoint_name} if props.endpoint_name else {}),
        model_catalog=str(props.catalog_files.catalog_file),
        endpoint=props.endpoint,
        scaling=props.scaling,
        alarms=props.alarms,
        updates=props.updates,
        build=props.build,
    )
    settings = resolve_build_runners(settings, props.catalog)
    check_build_target(settings, props.catalog)
    problem = dedicated_problem(settings, props.catalog)
    if problem:
        raise SettingsError(problem)
    return props if settings.build == props.build else replace(props, build=settings.build)


def _prop_names() -> dict[str, str]:
    """Each cdk.json key a settings message may name -> the prop path an embedder wrote instead
    (`minInstanceCount` -> `scaling.min_instance_count`)."""
    names = {"modelCatalog": "catalog", "stackName": "endpoint_name"}
    for prop in fields(TritonMultiModelEndpointProps):
        group = prop.default_factory() if callable(prop.default_factory) else None
        for name, setting in getattr(type(group), "model_fields", {}).items():
            names[setting.alias or name] = f"{prop.name}.{name}"
    return names


@contextmanager
def in_prop_names() -> Iterator[None]:
    """A SettingsError raised inside, its cdk.json keys replaced by the props' own names: an embedder never
    wrote `minInstanceCount`, but `scaling=ScalingSettings(min_instance_count=...)`."""
    try:
        yield
    except SettingsError as error:
        names = _prop_names()
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
        raise SettingsError(pattern.sub(lambda key: names[key.group(1)], str(error))) from None
