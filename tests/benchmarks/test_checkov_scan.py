"""The checkov scan's verdict on a report (benchmarks/checkov_scan.py), without checkov:
tests/infra/test_app.py runs the real one."""

from __future__ import annotations

from typing import Any

from benchmarks import checkov_scan


def report(*, failed: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "results": {"failed_checks": failed, "skipped_checks": skipped},
        "summary": {"passed": 3, "failed": len(failed), "skipped": len(skipped), "checkov_version": "3.3.30"},
    }


def checked(check_id: str, name: str, resource: str) -> dict[str, Any]:
    return {"check_id": check_id, "check_name": name, "resource": resource, "file_path": "/S.template.json"}


def test_a_check_checkov_names_otherwise_than_the_table_is_a_problem_and_applied_skips_are_not() -> None:
    name = checkov_scan.CHECKS["CKV_AWS_18"].name
    skips = {
        ("S.template.json", "Logs", "CKV_AWS_18"): "why",
        ("S.template.json", "Other", "CKV_AWS_18"): "why",
    }
    found = checkov_scan.problems(
        report(
            failed=[],
            skipped=[
                checked("CKV_AWS_18", name, "AWS::S3::Bucket.Logs"),
                checked("CKV_AWS_18", "Renamed", "AWS::S3::Bucket.Other"),
            ],
        ),
        skips,
    )
    assert found == [f"CKV_AWS_18 is 'Renamed' to checkov, {name!r} in CHECKS"]


def test_the_summary_counts_skips_by_check_and_lists_every_problem() -> None:
    failed = checked("CKV_AWS_21", "Ensure the S3 bucket has versioning enabled", "AWS::S3::Bucket.Logs")
    result = checkov_scan.summary(report(failed=[failed], skipped=[]), {}, [])
    assert result["failed"] == 1 and result["skipped_by_check"] == {}
    assert result["problems"] == [
        "failed: CKV_AWS_21 (Ensure the S3 bucket has versioning enabled) on AWS::S3::Bucket.Logs"
        " in S.template.json"
    ]
    assert "- failed: CKV_AWS_21" in checkov_scan.markdown(result)
