"""The growth benchmark's own logic: the log-log slope and its words, its figures' slopes and curves, the
S3 catalog it makes from a local lock, the dashboard body it reads from a template, the curves chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmarks.growth import (
    FAMILY,
    S3_SOURCE,
    _growth,
    dashboard_body_bytes,
    record,
    s3_catalog_from,
)
from benchmarks.growth_fit import growth_word, loglog_slope
from benchmarks.report import write_report
from benchmarks.results import Report, Section
from triton_mme.catalog.lock import CatalogLock, CheckpointPin, lock_path, read_lock

SIZES = (10, 100, 1000)


@pytest.mark.parametrize(
    ("values", "slope", "word"),
    [
        ((5.0, 5.0, 5.0), 0.0, "constant"),
        ((1.0, 10.0, 100.0), 1.0, "linear"),
        ((1.0, 100.0, 10_000.0), 2.0, "worse than linear"),
        ((2.0, 2 * 10**0.5, 20.0), 0.5, "sublinear"),
    ],
)
def test_the_slope_of_a_power_law_is_its_exponent(values: tuple[float, ...], slope: float, word: str) -> None:
    assert loglog_slope(SIZES, values) == pytest.approx(slope)
    assert growth_word(loglog_slope(SIZES, values)) == word


def test_the_slope_is_a_least_squares_fit_and_ignores_zero_values() -> None:
    # c = N^1 with a fixed start-up cost of 5 at the smallest size: the fit lies between 0 and 1.
    assert 0.5 < loglog_slope(SIZES, (15.0, 105.0, 1005.0)) < 1.0
    assert loglog_slope((10, 100, 1000), (0.0, 1.0, 10.0)) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("sizes", "values", "match"),
    [((10, 100), (1.0,), "2 sizes but 1 values"), ((10, 10), (1.0, 2.0), "two or more sizes")],
)
def test_a_slope_needs_two_sizes(sizes: tuple[int, ...], values: tuple[float, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        loglog_slope(sizes, values)


def test_growth_fits_every_metric_measured_at_two_sizes_and_charts_the_costs() -> None:
    section = Section(name="growth", title="15. Growth")
    for size in SIZES:
        record(section, "lock", size, size * 0.01, 100 * 2**20)
        record(section, "dashboard", size, 4.2)
    record(section, "build", 10, 30.0)  # the larger builds did not finish: one point, no slope
    _growth(section, SIZES)
    assert section.figure("slope.lock").value == pytest.approx(1.0)
    assert "(linear)" in section.figure("slope.lock").label
    assert section.figure("slope.lock_peak").value == pytest.approx(0.0)
    assert "(constant)" in section.figure("slope.dashboard").label
    with pytest.raises(KeyError):
        section.figure("slope.build")
    lock_curve = next(
        points for label, points in section.curves.items() if label.startswith("triton-mme lock")
    )
    assert lock_curve == [(10.0, "lock.10"), (100.0, "lock.100"), (1000.0, "lock.1000")]
    assert not any("peak" in label for label in section.curves)


def test_the_s3_catalog_carries_the_local_pins_under_s3_sources(tmp_path: Path) -> None:
    local = tmp_path / "local" / "models.yaml"
    local.parent.mkdir()
    local.write_text("models: []\n")
    pin = CheckpointPin(
        source="checkpoint:checkpoints/c0000.safetensors", sha256="a" * 64, size_bytes=3, parameters=7
    )
    lock_path(local).write_text(
        CatalogLock(families={FAMILY: ("c0000",)}, checkpoints={f"{FAMILY}-c0000": pin}).to_yaml()
    )
    catalog = s3_catalog_from(local, tmp_path / "s3")
    [entry] = yaml.safe_load(catalog.read_text())["models"]
    assert entry["source"] == S3_SOURCE and entry["variants"] == "listed"
    lock = read_lock(lock_path(catalog))
    assert lock is not None and lock.families == {FAMILY: ("c0000",)}
    moved = lock.checkpoints[f"{FAMILY}-c0000"]
    assert moved.source == "checkpoint:s3://growth-checkpoints/growth/c0000.safetensors"
    assert (moved.sha256, moved.size_bytes, moved.parameters) == (pin.sha256, 3, 7)


def test_the_dashboard_body_counts_the_literal_parts_of_every_dashboard() -> None:
    kind = "AWS::CloudWatch::Dashboard"
    joined = ["ab", {"Ref": "X"}, "c"]
    template = {
        "Resources": {
            "A": {"Type": kind, "Properties": {"DashboardBody": {"Fn::Join": ["", joined]}}},
            "B": {"Type": kind, "Properties": {"DashboardBody": "{}"}},
            "C": {"Type": "AWS::SNS::Topic"},
        }
    }  # fmt: skip
    assert dashboard_body_bytes(template) == 5


def test_a_growth_section_charts_as_curves(tmp_path: Path) -> None:
    section = Section(name="growth", title="15. Growth")
    for size in SIZES:
        record(section, "lock", size, size * 0.01)
        record(section, "plan", size, 2.0 + size * 0.001)
    _growth(section, SIZES)
    machine = {"cpu_model": "Test CPU 9000", "usable_cores": 2, "memory_gib": 8.0, "gpu": None}
    report = Report(
        date="2030-01-02", machine=machine, versions={}, command="x", quick=True, sections=[section]
    )
    png = write_report(report, tmp_path)[2]
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 5000


def test_a_run_past_its_limit_is_stopped_with_the_processes_it_started() -> None:
    import sys

    from benchmarks.process_tree import run_measured

    # The grandchild holds the pipes open: the run can only return when it was killed too.
    child = (
        "import subprocess, time; subprocess.Popen(['sleep', '60']); print('started', flush=True); "
        "time.sleep(60)"
    )
    run = run_measured([sys.executable, "-c", child], limit_s=1.5)
    assert run.stopped and run.returncode != 0
    assert run.seconds < 20 and run.stdout == "started\n"
    finished = run_measured([sys.executable, "-c", "print('done')"], limit_s=30)
    assert not finished.stopped and finished.returncode == 0 and finished.stdout == "done\n"


def test_the_client_growth_figures_come_from_one_rerunnable_command(tmp_path: Path) -> None:
    from benchmarks.growth_client import main as client_growth

    out = tmp_path / "client.json"
    assert client_growth(["--models", "30", "--out", str(out)]) == 0
    row = json.loads(out.read_text())["sizes"]["30"]
    assert set(row) == {"manifest_kb", "index", "whole_manifest", "invoke_dry_run"}
    assert set(row["index"]) == {"first_ms", "above_import_mib", "later_ms"}
    assert row["index"]["first_ms"] > 0 and row["index"]["later_ms"] < row["index"]["first_ms"]
    assert set(row["invoke_dry_run"]) == {"model", "target_model", "model_local_manifest"}
    assert all(run["seconds"] > 0 and run["peak_mib"] > 20 for run in row["invoke_dry_run"].values())


def test_the_growth_chart_draws_what_each_result_file_has(tmp_path: Path) -> None:
    from benchmarks.growth_chart import curves, main

    run = {"seconds": 2.0, "cpu_seconds": 1.5, "peak_mib": 60.0}
    plan = {
        "sizes": {"10": {"plan": run, "plan --json": run}, "10000": {"plan": {**run, "cpu_seconds": 6.0}}}
    }
    resolve = {"first_ms": 20.0, "above_import_mib": 0.5, "later_ms": 0.001}
    client = {"sizes": {"10": {"index": resolve, "whole_manifest": resolve}}}
    lock = {"sizes": {"10": {"check_unchanged": run, "check_rehash": run}}}
    panels = curves(plan, client, lock)
    planner = {curve.label: curve for curve in panels["Planner: CPU time (s)"]}
    assert planner["plan"].points == [(10, 1.5), (10000, 6.0)] and planner["plan"].target == 10.0
    assert planner["plan --json"].points == [(10, 1.5)]  # not measured at 10,000: left out
    client_time = {curve.label: curve for curve in panels["Client and lock: wall time (s)"]}
    assert client_time["client: later resolve"].points == [(10, 1e-6)]
    assert client_time["client: first resolve, whole manifest"].replaced
    memory = {curve.label: curve for curve in panels["Client and lock: memory (MiB)"]}
    assert (
        memory["invoke --dry-run --target-model (store)"].points == []
    )  # an older client file: no such figure
    files = []
    for name, document in (("plan", plan), ("client", client), ("lock", lock)):
        files += [f"--{name}", str(tmp_path / f"{name}.json")]
        (tmp_path / f"{name}.json").write_text(json.dumps(document))
    assert main([*files, "--out", str(tmp_path / "growth.png")]) == 0
    assert (tmp_path / "growth.png").read_bytes().startswith(b"\x89PNG")
