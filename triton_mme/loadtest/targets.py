"""Where a load test sends its requests, one session per Locust user.

Each archive goes where the manifest places it (client.transport.route_of): its TargetModel on the multi-model
endpoint, or its inference component on the inference-component endpoint.

- The local Triton: HTTP to the local endpoint's `/models/<TargetModel>/invoke`, or its stand-in route for an
  inference component (keep-alive, geventhttpclient as Locust's FastHttpUser uses it); its
  `X-Local-Model-Cache` header says hit or miss per request.
- SageMaker: InvokeEndpoint through boto3 (SigV4), one attempt and no retries, so a
  ModelNotReadyException or a timeout is seen as it happens. SageMaker does not say per request whether the
  model was loaded: a request counts as cold when it got ModelNotReadyException or took longer than
  `cold_threshold_s` (when given); the endpoint's own ModelCacheHit metric can be read afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from triton_mme.client.transport import Route, local_path, route_of
from triton_mme.core.errors import UserError, aws_error_code, first_line
from triton_mme.core.wording import plural
from triton_mme.loadtest.observe import Kind, Observation, kind_of_sagemaker_error, kind_of_status
from triton_mme.loadtest.requests import RequestPlan

CACHE_HEADER = "X-Local-Model-Cache"  # the local endpoint's (triton_mme/local_triton/proxy.py)


class TargetError(UserError, ValueError):
    """A target that cannot be driven; one line."""


def _failed(
    index: int, started: float, kind: Kind, why: object, *, cache_hit: bool | None = None
) -> Observation:
    detail = first_line(why) if isinstance(why, BaseException) else str(why)
    return Observation(index, started, time.monotonic() - started, kind, cache_hit, detail)


class Session(Protocol):
    def send(self, index: int) -> Observation: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class LocalTarget:
    url: str
    plan: RequestPlan
    timeout_s: float

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if (
            parts.scheme != "http"
            or parts.hostname not in ("127.0.0.1", "localhost", "::1")
            or parts.path.strip("/")
        ):
            raise TargetError(f"--local {self.url!r}: allowed http://127.0.0.1:<port> (the local endpoint)")

    def session(self) -> LocalSession:
        return LocalSession(self)


class LocalSession:
    def __init__(self, target: LocalTarget):
        from geventhttpclient import HTTPClient

        parts = urlsplit(target.url)
        self.plan = target.plan
        self.client = HTTPClient(
            parts.hostname or "127.0.0.1",
            port=parts.port or 80,
            connection_timeout=target.timeout_s,
            network_timeout=target.timeout_s,
            concurrency=1,
        )
        self.paths = tuple(local_path(route_of(record)) for record in target.plan.records)

    def send(self, index: int) -> Observation:
        request = self.plan.bodies[index]
        started = time.monotonic()
        try:
            response = self.client.request(
                "POST", self.paths[index], body=request.body, headers={"Content-Type": request.content_type}
            )
            try:
                response.read()
            finally:
                response.release()
        except TimeoutError as error:
            return _failed(index, started, "timeouts", error)
        except OSError as error:
            return _failed(index, started, "other", error)
        elapsed = time.monotonic() - started
        cache = response.get(CACHE_HEADER)
        hit = None if cache not in ("hit", "miss") else cache == "hit"
        return Observation(index, started, elapsed, kind_of_status(response.status_code), hit)

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class SageMakerTarget:
    """The multi-model `endpoint` and the inference-component `component_endpoint`: each needed where the
    plan has an archive placed there."""

    endpoint: str | None
    plan: RequestPlan
    region: str | None
    timeout_s: float
    cold_threshold_s: float | None = None
    component_endpoint: str | None = None

    def __post_init__(self) -> None:
        routes = [route_of(record) for record in self.plan.records]
        dedicated = [r for r in routes if r.inference_component is not None]
        if dedicated and self.component_endpoint is None:
            raise TargetError(
                f"the traffic calls {plural(len(dedicated), 'archive')} on inference components (e.g. "
                f"{dedicated[0].target_model}): pass --component-endpoint NAME (the stack output "
                "InferenceComponentEndpointName)"
            )
        if len(dedicated) < len(routes) and self.endpoint is None:
            raise TargetError(
                "the traffic calls models on the multi-model endpoint: pass --endpoint NAME (the stack "
                "output EndpointName)"
            )

    def calls(self) -> tuple[tuple[str, dict[str, str]], ...]:
        """Per archive: the endpoint and InvokeEndpoint's routing parameter."""
        found = []
        for record in self.plan.records:
            dedicated = route_of(record).inference_component is not None
            endpoint = self.component_endpoint if dedicated else self.endpoint
            route: Route = route_of(record, endpoint) if dedicated and endpoint else route_of(record)
            assert endpoint is not None
            found.append((endpoint, route.routing))
        return tuple(found)

    def session(self) -> SageMakerSession:
        return SageMakerSession(self)


def runtime_client(region: str | None, timeout_s: float) -> Any:
    """A sagemaker-runtime client that makes one attempt (no retries hide a cold start or an error)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=timeout_s
    )
    return boto3.client("sagemaker-runtime", region_name=region, config=config)


class SageMakerSession:
    def __init__(self, target: SageMakerTarget, client: Any = None):
        self.target = target
        self.client = client or runtime_client(target.region, target.timeout_s)
        self.calls = target.calls()

    def send(self, index: int) -> Observation:
        from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError

        target = self.target
        request = target.plan.bodies[index]
        endpoint, routing = self.calls[index]
        started = time.monotonic()
        try:
            response = self.client.invoke_endpoint(
                EndpointName=endpoint,
                **routing,
                ContentType=request.content_type,
                Body=request.body,
            )
            response["Body"].read()
        except ClientError as error:
            code = aws_error_code(error)
            kind = kind_of_sagemaker_error(
                code,
                error.response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
                error.response.get("OriginalStatusCode"),
            )
            # Still loading after InvokeEndpoint's 60 s: a cold request (counted where cold is being judged).
            hit = False if kind == "model_not_ready" and target.cold_threshold_s is not None else None
            return _failed(index, started, kind, code, cache_hit=hit)
        except (ReadTimeoutError, ConnectTimeoutError) as error:
            return _failed(index, started, "timeouts", error)
        except BotoCoreError as error:
            return _failed(index, started, "other", error)
        elapsed = time.monotonic() - started
        hit = None if target.cold_threshold_s is None else elapsed < target.cold_threshold_s
        return Observation(index, started, elapsed, "ok", hit)

    def close(self) -> None:
        return None
