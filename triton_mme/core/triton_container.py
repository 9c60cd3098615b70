"""The SageMaker Triton container's environment, once for the endpoint's Model, the serving check and the
local Triton, and what the image's entry point makes of it.

The entry point is triton-inference-server/server `docker/sagemaker/serve` (read at branch r25.04, commit
d79c4f11). In multi-model mode it starts

    tritonserver --allow-sagemaker=true --allow-http=false --model-control-mode=explicit
        --model-repository=/tmp/sagemaker --model-namespacing=true --allow-grpc=false --allow-metrics=false
        --log-verbose=... --log-info=... ... --backend-config=python,shm-default-byte-size=16777216 ...

Two of its choices change what the endpoint does, and the local Triton copies both:

- **Model namespacing.** `--model-namespacing=true` unless `SAGEMAKER_TRITON_DISABLE_MODEL_NAMESPACING` is
  set, and then its *value* becomes the flag's (`=false` turns namespacing off; `=true` keeps it on). With
  namespacing, Triton's core names a model `<repository>::<name>` in its log (core `model.h`,
  `ModelIdentifier::str`; the namespace is the repository path, `model_repository_manager.cc`), and the
  SageMaker server registers each TargetModel as a repository of its own (`/opt/ml/models/<hash>/model`,
  `sagemaker_server.cc`). The endpoint keeps the image's default: the log parser reads both forms
  (triton_mme/observability/triton_log.py), and a flag whose variable means the opposite of its name is
  left alone rather than set to a value a later image may read differently.
- **Ping mode.** tritonserver answers `/ping` by liveness or readiness as `SAGEMAKER_TRITON_PING_MODE` in
  its own environment says (`sagemaker_server.h`, default `ready`). Not ready is HTTP 400
  (`http_server.cc`, `HandleServerHealth`), and with strict readiness (the default) one model that failed
  to load leaves the server not ready. The entry point assigns `SAGEMAKER_TRITON_PING_MODE="live"` in
  multi-model mode without `export`: the value reaches tritonserver only when the variable already came in
  the container's environment (a shell exports what it inherited). So the Model sets it: then the
  assignment is exported, and tritonserver pings by liveness whichever value the entry point picks.
"""

from __future__ import annotations

from collections.abc import Mapping

from triton_mme.core.triton_logging import LOG_ENVIRONMENT, log_flags

PING_MODE_VARIABLE = "SAGEMAKER_TRITON_PING_MODE"
PING_MODE_OVERRIDE_VARIABLE = "SAGEMAKER_TRITON_OVERRIDE_PING_MODE"
# What sagemaker_server.h reads when the variable is not in tritonserver's environment.
SERVER_DEFAULT_PING_MODE = "ready"
# Liveness: a failed load is that model's 400 (or 507), never the container's failed health check.
PING_MODE = "live"
NAMESPACING_VARIABLE = "SAGEMAKER_TRITON_DISABLE_MODEL_NAMESPACING"

# The Model's container environment (the serving check's project gets the same).
CONTAINER_ENVIRONMENT: dict[str, str] = {**LOG_ENVIRONMENT, PING_MODE_VARIABLE: PING_MODE}
# An inference component's container (a `placement: dedicated` entry): the same log levels; it serves one
# model in single-model mode, so the image's readiness ping (ready once that model loaded) is the right one.
COMPONENT_ENVIRONMENT: dict[str, str] = dict(LOG_ENVIRONMENT)


def namespacing_flag(environment: Mapping[str, str]) -> str:
    """The entry point's `--model-namespacing` flag for a container environment."""
    return f"--model-namespacing={environment.get(NAMESPACING_VARIABLE) or 'true'}"


def serve_flags(environment: Mapping[str, str] = CONTAINER_ENVIRONMENT) -> list[str]:
    """The entry point's flags that decide what the log says: namespacing and the log levels."""
    return [namespacing_flag(environment), *log_flags(dict(environment))]


def server_ping_mode(environment: Mapping[str, str], *, multi_model: bool = True) -> str:
    """The ping mode tritonserver runs with when the container starts with `environment`."""
    if PING_MODE_VARIABLE not in environment:
        return SERVER_DEFAULT_PING_MODE  # the entry point's assignment is not exported
    override = environment.get(PING_MODE_OVERRIDE_VARIABLE)
    return override or ("live" if multi_model else "ready")
