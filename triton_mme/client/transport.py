"""Where a request goes: a SageMaker endpoint, a local Triton with the SageMaker routes, or files."""

from __future__ import annotations

import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from triton_mme.client.payloads import EncodedRequest
from triton_mme.core.bounded import load_json
from triton_mme.core.errors import UserError, aws_error_code, describe_aws_error, printable
from triton_mme.core.limits import MAX_REPLY_BYTES

BODY_FILE_NAME = "body.bin"
# The local endpoint's per-request cache state (triton_mme/local_triton/proxy.py CACHE_HEADER).
LOCAL_CACHE_HEADER = "X-Local-Model-Cache"
CONTENT_TYPE_FILE_NAME = "content-type.txt"


# The client never retries behind the user's back. botocore's default (legacy: up to 5 attempts) would
# run InvokeEndpoint's model again after a timeout or a 5xx, and would wait through the 429
# ModelNotReadyException a multi-model endpoint answers while it loads a model. One attempt, and the
# first error comes back at once as one line; an explicit Config outranks AWS_MAX_ATTEMPTS and the
# shared config file. The read timeout covers InvokeEndpoint's own 60 s. botocore is imported only where a
# request goes to AWS: a dry run or a local call does not pay for it.
@cache
def one_attempt() -> Any:
    from botocore.config import Config

    return Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=70)


def __getattr__(name: str) -> Any:
    if name == "ONE_ATTEMPT":
        return one_attempt()
    raise AttributeError(name)


class TransportError(UserError, RuntimeError):
    """The request did not get a successful reply; the message is one line. `code` is the service's error
    code where one came back (e.g. ModelNotReadyException), for a caller that waits on some of them."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class Reply(NamedTuple):
    content_type: str
    body: bytes
    # The local endpoint's X-Local-Model-Cache ("hit" or "miss"); SageMaker's reply does not say.
    model_cache: str | None = None


def runtime_client(region: str | None) -> Any:
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.client("sagemaker-runtime", region_name=region, config=one_attempt())
    except BotoCoreError as error:
        raise TransportError(
            f"sagemaker-runtime: {describe_aws_error(error)}; pass --region or configure AWS"
        ) from None


def invoke_endpoint(runtime: Any, endpoint: str, target_model: str, request: EncodedRequest) -> Reply:
    """InvokeEndpoint on a multi-model endpoint with a `sagemaker-runtime` client."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = runtime.invoke_endpoint(
            EndpointName=endpoint,
            TargetModel=target_model,
            ContentType=request.content_type,
            Body=request.body,
        )
    except (ClientError, BotoCoreError) as error:
        raise TransportError(
            f"endpoint {endpoint}: {describe_aws_error(error)}", code=aws_error_code(error)
        ) from None
    return Reply(str(response.get("ContentType", "")), response["Body"].read())


def invoke_local(url: str, target_model: str, request: EncodedRequest, *, timeout: float = 300) -> Reply:
    """POST the same body to `<url>/models/<TargetModel>/invoke`, the route a multi-model container serves."""
    address = f"{url.rstrip('/')}/models/{quote(target_model, safe='')}/invoke"
    post = urllib.request.Request(
        address, data=request.body, method="POST", headers={"Content-Type": request.content_type}
    )
    try:
        with urllib.request.urlopen(post, timeout=timeout) as response:
            cache = response.headers.get(LOCAL_CACHE_HEADER)
            return Reply(response.headers.get("Content-Type", ""), response.read(), cache)
    except urllib.error.HTTPError as error:
        raise TransportError(f"{address}: HTTP {error.code}: {_error_text(error.read())}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise TransportError(f"{address}: cannot reach the server ({reason})") from None


def _error_text(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        parsed = load_json(text, where="the reply", max_bytes=MAX_REPLY_BYTES)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "error" in parsed:
        text = str(parsed["error"])
    return printable(" ".join(text.split())[:500]) or "(empty body)"


def write_dry_run(directory: Path, request: EncodedRequest) -> tuple[Path, Path]:
    """The request as files: exactly the bytes and content type that would be sent."""
    directory.mkdir(parents=True, exist_ok=True)
    body_path, type_path = directory / BODY_FILE_NAME, directory / CONTENT_TYPE_FILE_NAME
    body_path.write_bytes(request.body)
    type_path.write_text(request.content_type + "\n", encoding="ascii")
    return body_path, type_path
