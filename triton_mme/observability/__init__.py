"""Per-model figures of a multi-model endpoint: Triton's own log lines (loads, unloads, failed loads,
invocations) and the callers' published latency records, as one table per TargetModel.

SageMaker publishes no per-model metric for multi-model endpoints; the container's log names every model it
loads, unloads or fails to load, and the client can publish per-model latency (docs/observability.md).
"""
