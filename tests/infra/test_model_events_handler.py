"""The endpoint log reader: a delivery of real Triton lines becomes one JSON line per model event."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from triton_mme_cdk.constructs.monitoring.model_events_handler import handler
from triton_mme_cdk.constructs.monitoring.model_observability import MODEL_LINE_TERMS

FIXTURES = Path(__file__).parents[1] / "observability/fixtures"
CAPTURED = (FIXTURES / "triton-2.51-sagemaker.log").read_text()
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
# Recorded with model namespacing on, as the image's entry point starts Triton on the endpoint.
NAMESPACED = (FIXTURES / "triton-2.51-sagemaker-namespaced.log").read_text()
NAMESPACED_EXPECTED = json.loads((FIXTURES / "expected-namespaced.json").read_text())["models"]


def delivery(lines: list[str], message_type: str = "DATA_MESSAGE") -> dict[str, object]:
    payload = {
        "messageType": message_type,
        "logGroup": "/aws/sagemaker/Endpoints/triton-mme",
        "logStream": "AllTraffic/i-0123",
        "logEvents": [{"id": str(i), "timestamp": 0, "message": line} for i, line in enumerate(lines)],
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def test_a_delivery_of_captured_lines_gives_the_events_that_happened(
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = handler.main(delivery(CAPTURED.splitlines()), None)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert answer == {"records": len(records)}
    for name, done in EXPECTED.items():
        mine = [r for r in records if r.get("model") == name]
        assert sum(r["event"] == "load" for r in mine) == done.get("cold_loads", 0), name
        assert sum(r["event"] == "unload" for r in mine) == done.get("evictions", 0), name
        assert sum(r["event"] == "failed_load" for r in mine) == done.get("failed_loads", 0), name
        assert sum(r.get("count", 0) for r in mine if r["event"] == "requests") == done.get("requests", 0)
    causes = {r["model"].split("-")[0]: r["cause"] for r in records if r["event"] == "failed_load"}
    assert causes == {"oom": "out_of_memory", "mismatched": "other"}
    assert all(r["load_s"] > 0 for r in records if r["event"] == "load")


def test_namespaced_lines_the_subscription_passes_give_records_keyed_on_the_target_model() -> None:
    # What the subscription's filter lets through (any term, case-sensitive), then the reader.
    passed = [line for line in NAMESPACED.splitlines() if any(term in line for term in MODEL_LINE_TERMS)]
    records = handler.model_events(passed, "e")
    # The Contributor Insights rules rank by $.model: one key per TargetModel, whatever the event.
    assert {r["model"] for r in records} == set(NAMESPACED_EXPECTED)
    for name, done in NAMESPACED_EXPECTED.items():
        mine = [r for r in records if r["model"] == name]
        assert sum(r["event"] == "load" for r in mine) == done.get("cold_loads", 0), name
        assert sum(r["event"] == "unload" for r in mine) == done.get("evictions", 0), name
        assert sum(r["event"] == "failed_load" for r in mine) == done.get("failed_loads", 0), name
        assert sum(r.get("count", 0) for r in mine if r["event"] == "requests") == done.get("requests", 0)
    assert all("load_s" in r for r in records if r["event"] == "load")  # loading paired with loaded


def test_malformed_lines_are_counted_not_dropped_silently() -> None:
    records = handler.model_events(["I1201 12:46:23 broken", "not triton"], "e")
    assert records == [{"event": "malformed", "endpoint": "e", "count": 1}]


def test_the_control_message_on_subscribing_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert handler.main(delivery([], "CONTROL_MESSAGE"), None) == {"records": 0}
    assert capsys.readouterr().out == ""
