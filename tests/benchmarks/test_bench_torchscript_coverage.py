"""The recorded TorchScript coverage run (benchmarks/results/torchscript-coverage.json) still describes the
code: every classifier torchvision lists and every text type the build accepts was exported and passed, and
every operator their graphs hold is in the allowlist the checks use. Shrinking the allowlist, or a torchvision
with a new classifier, fails here until the script is rerun."""

from __future__ import annotations

import json

from benchmarks.torchscript_coverage import RESULT_FILE, text_models, torchvision_classifiers
from triton_mme.archive_inspection.torchscript_code import TORCHSCRIPT_OPERATORS


def test_every_classifier_and_text_type_passed_in_the_recorded_run() -> None:
    result = json.loads(RESULT_FILE.read_text(encoding="utf-8"))
    rows = {row["model"]: row for row in result["rows"]}
    assert sorted(rows) == sorted([*torchvision_classifiers(), *text_models()])
    assert [model for model, row in rows.items() if not row["passed"]] == []
    assert len(torchvision_classifiers()) == 80


def test_every_recorded_operator_is_allowed() -> None:
    result = json.loads(RESULT_FILE.read_text(encoding="utf-8"))
    recorded = {operator for row in result["rows"] for operator in row["operators"]}
    assert recorded == set(result["operators"])
    assert sorted(recorded - TORCHSCRIPT_OPERATORS) == []
