"""What every settings group is made of: the error, the context-key conversion, the shared limits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from triton_mme.core.errors import describe_validation_error
from triton_mme.core.limits import MAX_NUMBER_DIGITS
from triton_mme.core.numbers import finite_number, whole_number
from triton_mme.core.platform import PLATFORM

if TYPE_CHECKING:
    from aws_cdk import aws_logs as logs


# A sanity bound on instance counts (typos such as 50 instead of 5); raise it deliberately if needed.
MAX_INSTANCES = 100
KMS_KEY_ARN_PATTERN = re.compile(
    r"^arn:aws(?:-cn|-us-gov)?:kms:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):\d{12}:key/"
    r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$"
)
REGION_PATTERN = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d$")
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
# CloudWatch evaluates at most one day of periods; the alarms use 1-minute periods.
MAX_ALARM_EVALUATION_MINUTES = 1440


# CloudWatch Logs retention periods, in the order of aws_logs.RetentionDays (whose values are names).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                      2922, 3288, 3653)  # fmt: skip

# cdk deploy waits for the build and its serving check on a wait condition (model_build_engine), whose own
# limit is 12 hours: both stages, their queueing and this margin (the stages' start retries, each task's
# backstop minute and the signal) must fit in it.
BUILD_DEADLINE_MARGIN_MINUTES = 5
LONG_BUILD_DEADLINE_MINUTES = (
    PLATFORM.limits.wait_condition_timeout_minutes.value - BUILD_DEADLINE_MARGIN_MINUTES
)

# A step size may be written as a JSON number in cdk.json: 2 means "2" (instances).
NUMBER_AS_TEXT = "number-as-text"
StepSize = Annotated[str, NUMBER_AS_TEXT]


class SettingsError(ValueError):
    """A setting that cannot be used; the message is one line naming key, value and what is allowed."""


def context_key(field_name: str) -> str:
    """The camelCase context key of a flat snake_case name (`instance_type` -> `instanceType`)."""
    head, *rest = field_name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# Text that reads as a number, finite or not (float() takes "inf" and "nan" too).
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.I)


def setting_error(key: str, value: object, problem: str) -> SettingsError:
    return SettingsError(f"{key}={value} {problem}")


def plain_number(number: float) -> str:
    return f"{number:g}"


class SettingsGroup(BaseModel):
    """A frozen group of settings whose fields are known by their context keys (aliases)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise SettingsError(describe_validation_error(error)) from None

    @classmethod
    def key(cls, field_name: str) -> str:
        alias = cls.model_fields[field_name].alias
        assert alias is not None
        return alias

    @classmethod
    def context_keys(cls) -> tuple[str, ...]:
        return tuple(cls.key(name) for name in cls.model_fields)

    @model_validator(mode="before")
    @classmethod
    def _from_context_values(cls, values: Any) -> Any:
        """Context values as the fields' types (`-c` gives strings, cdk.json JSON values); empty means the
        default."""
        if not isinstance(values, Mapping):
            return values
        by_key = {cls.key(name): name for name in cls.model_fields}
        converted: dict[str, Any] = {}
        for given, raw in values.items():
            name = given if given in cls.model_fields else by_key.get(given)
            if name is None:
                raise SettingsError(f"unknown setting {given}; allowed: " + ", ".join(cls.context_keys()))
            if raw is None or raw == "":
                continue
            field = cls.model_fields[name]
            converted[name] = context_value(cls.key(name), raw, field.annotation, field.metadata)
        return converted


def context_value(key: str, raw: Any, annotation: Any, metadata: list[Any]) -> Any:
    kinds = set(get_args(annotation)) - {type(None)} or {annotation}
    if bool in kinds:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise setting_error(key, raw, "is not true or false; allowed: true, false")
    if int in kinds:
        whole = whole_number(raw)
        if whole is None:
            raise setting_error(
                key,
                raw,
                f"is not a whole number; allowed: an integer such as 2, at most {MAX_NUMBER_DIGITS} digits",
            )
        return whole
    if float in kinds:
        number = finite_number(raw if isinstance(raw, (int, float)) else str(raw))
        if number is not None:
            return number
        if isinstance(raw, (int, float)) or _NUMBER_TEXT.fullmatch(str(raw).strip()):
            raise setting_error(key, raw, "is not a finite number; allowed: a number such as 60")
        raise setting_error(key, raw, "is not a number; allowed: a number such as 60")
    if NUMBER_AS_TEXT in metadata and isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    if isinstance(raw, Enum):
        return raw
    if not isinstance(raw, str):
        raise setting_error(key, raw, "is not text; allowed: a string")
    return raw.strip()


def log_retention_of(days: int) -> logs.RetentionDays:
    # Imported here: the settings are read without jsii's Node process too (`triton-mme plan`).
    from aws_cdk import aws_logs as logs

    finite = [member for member in logs.RetentionDays if member is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, finite, strict=True))[days]


def retention_problem(key: str, days: int) -> SettingsError | None:
    if days in LOG_RETENTION_DAYS:
        return None
    return setting_error(
        key, days, "is not a log retention; allowed: " + ", ".join(map(str, LOG_RETENTION_DAYS))
    )
