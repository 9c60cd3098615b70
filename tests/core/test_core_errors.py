"""The one formatter of each kind: an AWS SDK error and a pydantic ValidationError, each as one line."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from triton_mme.core.errors import aws_error_code, describe_aws_error, describe_validation_error


def _client_error(code: str, message: str, **extra: object) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}, **extra}, "InvokeEndpoint")  # type: ignore[arg-type]


def test_a_service_answer_is_its_code_and_message_on_one_line() -> None:
    error = _client_error("AccessDenied", "User: arn:aws:iam::1:user/x\nis not authorized")
    assert describe_aws_error(error) == "AccessDenied: User: arn:aws:iam::1:user/x is not authorized"
    assert aws_error_code(error) == "AccessDenied"


def test_a_model_error_names_the_model_s_own_status() -> None:
    error = _client_error("ModelError", "Received client error (400)", OriginalStatusCode=400)
    assert describe_aws_error(error) == "ModelError (model status 400): Received client error (400)"


def test_an_answer_without_a_message_is_its_code() -> None:
    assert describe_aws_error(_client_error("404", "")) == "404"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NoCredentialsError(), "Unable to locate credentials"),
        (
            EndpointConnectionError(endpoint_url="https://s3.example"),
            'Could not connect to the endpoint URL: "https://s3.example"',
        ),
        (ValueError("first\nsecond"), "first"),
    ],
)
def test_an_error_that_is_no_service_answer_is_its_first_line(error: Exception, expected: str) -> None:
    assert describe_aws_error(error) == expected
    assert aws_error_code(error) is None


class _Archive(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_model: str
    size: int

    @field_validator("target_model")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.endswith(".tar.gz"):
            raise ValueError("allowed a name ending in .tar.gz")
        return value


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid")
    archives: list[_Archive]


def _first_error(raw: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Document.model_validate(raw)
    return caught.value


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"archives": [{"target_model": "m.zip", "size": 1}]},
            "archives[0].target_model: allowed a name ending in .tar.gz (got 'm.zip')",
        ),
        ({"archives": [{"target_model": "m.tar.gz"}]}, "archives[0].size: required field is missing"),
        ({"archives": [], "colour": "red"}, "colour: unknown field"),
        ("not a mapping", "manifest: Input should be a valid dictionary or instance of _Document"),
    ],
)
def test_a_validation_error_is_one_line_naming_the_field_and_what_is_allowed(
    raw: object, expected: str
) -> None:
    assert describe_validation_error(_first_error(raw), whole="manifest") == expected
