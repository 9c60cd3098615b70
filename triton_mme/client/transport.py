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
from triton_mme.core.manifest import ArchiveRecord, ComponentPlacement
from triton_mme.core.naming import LOCAL_COMPONENT_ENDPOINT, inference_component_name
from triton_mme.core.platform import PLATFORM

BODY_FILE_NAME = "body.bin"
# The local endpoint's per-request cache state (triton_mme/local_triton/proxy.py CACHE_HEADER).
LOCAL_CACHE_HEADER = "X-Local-Model-Cache"
CONTENT_TYPE_FILE_NAME = "content-type.txt"
# The local stand-in for an inference component endpoint's route (triton_mme/local_triton/components.py).
LOCAL_COMPONENT_ROUTE = "inference-components"
# What a request to an inference component gets while it has no copy (min_copies 0 and scaled in): AWS
# documents only that the endpoint starts a copy soon after a request it cannot answer, that this "takes
# several minutes" and that "during that time, any attempts to invoke the endpoint will produce an error",
# counted by the NoCapacityInvocationFailures metric (SageMaker AI developer guide, "Scale an endpoint to zero
# instances", sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html). It names no error code, so
# every failure of such a component but the container's own reply (ModelError) may be that one.
SCALE_FROM_ZERO_SOURCE = "AWS, 'Scale an endpoint to zero instances'"
NOT_SCALE_FROM_ZERO_CODES = frozenset({"ModelError"})


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


class Route(NamedTuple):
    """Where one model is served: its TargetModel on the multi-model endpoint, or its inference component (on
    the inference-component endpoint) when the manifest places it there; `scales_to_zero` when that component
    may have no copy (min_copies 0)."""

    target_model: str
    inference_component: str | None = None
    scales_to_zero: bool = False

    @property
    def routing(self) -> dict[str, str]:
        """InvokeEndpoint's parameter that picks the model."""
        if self.inference_component is not None:
            return {"InferenceComponentName": self.inference_component}
        return {"TargetModel": self.target_model}

    def describe(self) -> str:
        if self.inference_component is None:
            return self.target_model
        return f"{self.target_model} (inference component {self.inference_component})"


def route_of(record: ArchiveRecord, component_endpoint: str = LOCAL_COMPONENT_ENDPOINT) -> Route:
    """Where the manifest says the archive is served; a dedicated model's component is the one the stack
    names on `component_endpoint` (default: the local stand-in's)."""
    placement = record.placement
    if isinstance(placement, ComponentPlacement):
        component = inference_component_name(component_endpoint, record.name)
        return Route(record.target_model, component, placement.scales_to_zero)
    return Route(record.target_model)


def failure_line(endpoint: str, route: Route, error: BaseException) -> str:
    """One line for a failed InvokeEndpoint; on a component that scales to zero, what AWS says such a
    failure may be and what to do."""
    text = describe_aws_error(error)
    if route.inference_component is None:
        return f"endpoint {endpoint}: {text}"
    line = f"endpoint {endpoint}, inference component {route.inference_component}: {text}"
    code = aws_error_code(error)
    no_capacity = PLATFORM.components.no_capacity_error
    if route.scales_to_zero and code == no_capacity.code and "no capacity" in text.lower():
        # The answer AWS's post shows for a component without a copy (core/platform_data, unconfirmed).
        line += (
            f"; it scales to zero (min_copies 0) and has no copy now: its first copy takes "
            f"{no_capacity.minutes_to_first_copy} minutes to start, retry then"
        )
    elif route.scales_to_zero and code not in NOT_SCALE_FROM_ZERO_CODES:
        line += (
            "; it scales to zero (min_copies 0), and while it starts a copy every request fails for several "
            f"minutes ({SCALE_FROM_ZERO_SOURCE}): retry in a few minutes"
        )
    return line


def invoke_endpoint(runtime: Any, endpoint: str, route: Route | str, request: EncodedRequest) -> Reply:
    """InvokeEndpoint with a `sagemaker-runtime` client: TargetModel on a multi-model endpoint, or
    InferenceComponentName on an inference-component endpoint (a bare string is a TargetModel)."""
    from botocore.exceptions import BotoCoreError, ClientError

    route = Route(route) if isinstance(route, str) else route
    try:
        response = runtime.invoke_endpoint(
            EndpointName=endpoint,
            **route.routing,
            ContentType=request.content_type,
            Body=request.body,
        )
    except (ClientError, BotoCoreError) as error:
        raise TransportError(failure_line(endpoint, route, error), code=aws_error_code(error)) from None
    return Reply(str(response.get("ContentType", "")), response["Body"].read())


def local_path(route: Route) -> str:
    """The local endpoint's path for a route: `/models/<TargetModel>/invoke`, the route a multi-model
    container serves, or `/inference-components/<name>/invoke`, the local stand-in for a component."""
    if route.inference_component is not None:
        return f"/{LOCAL_COMPONENT_ROUTE}/{quote(route.inference_component, safe='')}/invoke"
    return f"/models/{quote(route.target_model, safe='')}/invoke"


def invoke_local(url: str, route: Route | str, request: EncodedRequest, *, timeout: float = 300) -> Reply:
    """POST the same body to the local endpoint's route for the model (`local_path`)."""
    route = Route(route) if isinstance(route, str) else route
    address = f"{url.rstrip('/')}{local_path(route)}"
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
