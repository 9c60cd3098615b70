"""How the endpoint's Triton logs, and the same flags for the local Triton: one place for both.

The SageMaker Triton image's entry point (triton-inference-server/server `docker/sagemaker/serve`, r25.04)
turns `SAGEMAKER_TRITON_LOG_VERBOSE`, `_LOG_INFO`, `_LOG_WARNING` and `_LOG_ERROR` into `--log-verbose`,
`--log-info`, `--log-warning` and `--log-error`, and logs verbosely when `SAGEMAKER_TRITON_LOG_VERBOSE` is
unset (several lines per request). It sets no `--log-format`, so Triton writes its default format, which
`triton_mme.observability.triton_log` reads. Info level keeps the lines that name a model: every load,
unload, failed load and invocation.
"""

from __future__ import annotations

# Each environment variable of the entry point and the tritonserver flag it becomes.
ENTRY_POINT_FLAGS = {
    "SAGEMAKER_TRITON_LOG_VERBOSE": "--log-verbose",
    "SAGEMAKER_TRITON_LOG_INFO": "--log-info",
    "SAGEMAKER_TRITON_LOG_WARNING": "--log-warning",
    "SAGEMAKER_TRITON_LOG_ERROR": "--log-error",
}
# Verbose off (per-request lines), info on (the model lines), warnings and errors on.
LOG_ENVIRONMENT = {
    "SAGEMAKER_TRITON_LOG_VERBOSE": "0",
    "SAGEMAKER_TRITON_LOG_INFO": "true",
    "SAGEMAKER_TRITON_LOG_WARNING": "true",
    "SAGEMAKER_TRITON_LOG_ERROR": "true",
}


def log_flags(environment: dict[str, str] = LOG_ENVIRONMENT) -> list[str]:
    """The tritonserver flags the entry point passes for `environment`."""
    return [f"{flag}={environment[name]}" for name, flag in ENTRY_POINT_FLAGS.items() if name in environment]
