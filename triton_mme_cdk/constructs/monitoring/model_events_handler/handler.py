"""Subscribed to the endpoint's log group: turn Triton's model lines into one JSON line per model event.

CloudWatch Logs delivers the lines that match the subscription's filter, gzipped and base64-encoded; the same
parser that `triton-mme models --local` uses reads them (triton_mme/observability/triton_log.py), and each
event becomes one JSON line on this function's own log group, where Contributor Insights ranks TargetModels
and metric filters count totals. Invocations are summed per model per delivery, so a busy endpoint writes a
few lines per batch, not one per request.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections import Counter
from typing import Any

from triton_mme.core.model_metrics import EVENT_FAILED_LOAD, EVENT_LOAD, EVENT_REQUESTS, EVENT_UNLOAD
from triton_mme.observability.triton_log import Kind, LogEvent, read_events

ENDPOINT_NAME = os.environ.get("ENDPOINT_NAME", "")


def model_events(messages: list[str], endpoint: str) -> list[dict[str, Any]]:
    """The JSON records for a batch of log lines, in order, invocations summed per model at the end."""
    records: list[dict[str, Any]] = []
    requests: Counter[str] = Counter()
    started: dict[str, LogEvent] = {}
    malformed = 0
    for event in read_events(messages):
        if not isinstance(event, LogEvent):
            malformed += 1
            continue
        base = {"model": event.model, "endpoint": endpoint}
        if event.kind is Kind.INVOKED:
            requests[event.model] += 1
        elif event.kind is Kind.LOAD_STARTED:
            started[event.model] = event
        elif event.kind is Kind.LOADED:
            record: dict[str, Any] = {"event": EVENT_LOAD, **base}
            began = started.pop(event.model, None)
            if began is not None:
                record["load_s"] = round((event.seconds_of_day() - began.seconds_of_day()) % 86400, 3)
            records.append(record)
        elif event.kind is Kind.UNLOADED:
            records.append({"event": EVENT_UNLOAD, **base})
        elif event.kind is Kind.LOAD_FAILED:
            cause = "out_of_memory" if event.out_of_memory else "other"
            records.append({"event": EVENT_FAILED_LOAD, **base, "cause": cause, "reason": event.reason[:500]})
    records += [
        {"event": EVENT_REQUESTS, "model": m, "endpoint": endpoint, "count": n} for m, n in requests.items()
    ]
    if malformed:
        records.append({"event": "malformed", "endpoint": endpoint, "count": malformed})
    return records


def main(event: dict[str, Any], _context: object) -> dict[str, int]:
    payload = json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))
    if payload.get("messageType") != "DATA_MESSAGE":  # CloudWatch Logs' control message on subscribing
        return {"records": 0}
    records = model_events([e["message"] for e in payload.get("logEvents", [])], ENDPOINT_NAME)
    for record in records:
        print(json.dumps(record, separators=(",", ":")))
    return {"records": len(records)}
