"""The vocabulary of the per-model figures, shared by the endpoint's log reader, the callers' records, the
stack's Contributor Insights rules and dashboard, and `triton-mme models` (docs/observability.md)."""

from __future__ import annotations

# One JSON line per model event, written by the endpoint's log reader to the model-events log group:
# {"event": ..., "model": TargetModel, "endpoint": name, ...}.
EVENT_LOAD = "load"  # a cold load; with "load_s" where the loading line was seen
EVENT_UNLOAD = "unload"  # an eviction (or an unload on request)
EVENT_FAILED_LOAD = "failed_load"  # with "cause": "out_of_memory" (the platform's 507) or "other"
EVENT_REQUESTS = "requests"  # with "count": the invocations of one model in one batch of log lines

# Contributor Insights rules on that group: each ranks TargetModels by one event (top-N, no per-model metric).
INSIGHT_RULES = {
    "cold-loads": EVENT_LOAD,
    "evictions": EVENT_UNLOAD,
    "failed-loads": EVENT_FAILED_LOAD,
    "requests": EVENT_REQUESTS,
}


def insight_rule_name(endpoint_name: str, rule: str) -> str:
    """The rule's name: one set of rules per endpoint."""
    return f"{endpoint_name}-models-{rule}"


# Endpoint-wide totals from metric filters on the same group (one metric each, dimension EndpointName).
TOTALS_NAMESPACE = "TritonMme/Models"
TOTAL_METRICS = {EVENT_LOAD: "ColdLoads", EVENT_UNLOAD: "Evictions", EVENT_FAILED_LOAD: "FailedLoads"}

# What callers publish (embedded metric format or PutMetricData), per TargetModel.
CALLER_NAMESPACE = "TritonMme/Callers"
CALLER_LATENCY = "Latency"  # milliseconds, every answered request
CALLER_ERRORS = "Errors"  # count, requests that got no answer
CALLER_COLD = "ColdStarts"  # count, requests that loaded their model (cache header or latency threshold)
ENDPOINT_DIMENSION = "EndpointName"
MODEL_DIMENSION = "TargetModel"
# Past this many TargetModels a caller folds the rest into one value: each named model is a custom metric.
OTHER_MODELS = "(other)"
