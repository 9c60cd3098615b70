"""Documents read whole are bounded before they are parsed: size, nesting, YAML aliases, array headers and
the figures of a load-test report. Each case is one line and allocates nothing."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from planner_support import manifest_of, write_manifest

from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.cli import main
from triton_mme.core.golden import GoldenData, GoldenError
from triton_mme.core.limits import MAX_LABELS_BYTES, MAX_TRAFFIC_BYTES
from triton_mme.planner.traffic import TrafficError, read_traffic

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
)


def test_an_alias_bomb_in_the_catalogs_hf_config_is_refused_before_it_expands(tmp_path: Path) -> None:
    catalog = tmp_path / "models.yaml"
    catalog.write_text(
        "bomb:\n" + "".join(f"  {line}\n" for line in ALIAS_BOMB.splitlines()) + "models:\n"
        "  - name: roberta\n    source: huggingface:x/y\n    weights: random\n    formats: [onnx]\n"
        "    max_batch_size: 1\n    sequence_length: 8\n    hf_config: *u\n"
    )
    with pytest.raises(CatalogError) as caught:
        load_catalog(catalog)
    assert str(caught.value) == f"{catalog}: line 3: YAML alias *a is not allowed; write the value out"


def test_a_catalog_past_its_size_is_refused_unread(tmp_path: Path) -> None:
    catalog = tmp_path / "models.yaml"
    catalog.write_text("models: []\n" + "#" * (2 * 1024 * 1024))
    with pytest.raises(CatalogError, match=r"models.yaml: 1,048,577 bytes; allowed at most 1,048,576"):
        load_catalog(catalog)


def test_a_traffic_file_past_its_size_is_refused_unread(tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.yaml"
    traffic.write_bytes(b"duration_s: 3600\n" + b"#" * MAX_TRAFFIC_BYTES)
    with pytest.raises(
        TrafficError, match=rf"traffic.yaml: {MAX_TRAFFIC_BYTES + 1:,} bytes; allowed at most"
    ):
        read_traffic(traffic)


def test_a_deeply_nested_traffic_file_is_one_line(tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.json"
    traffic.write_text("[" * 50_000)
    with pytest.raises(TrafficError, match=r"traffic.json: nested 50000 levels deep; allowed at most 64"):
        read_traffic(traffic)


def test_a_golden_header_promising_terabytes_is_refused_before_allocation() -> None:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("input:x.npy", header.getvalue() + bytes(16))
        archive.writestr("output:y.npy", header.getvalue())
    with pytest.raises(GoldenError, match=r"promises 4,000,000,000,000 bytes of float32 but holds 16"):
        GoldenData.from_bytes(data.getvalue(), where="golden-x.npz")


def test_a_labels_file_past_its_size_is_refused_unread(tmp_path: Path) -> None:
    from triton_mme.client.manifest_source import ManifestSource

    (tmp_path / "labels-0123456789abcdef.json").write_bytes(
        b'["x"' + b', "x"' * (MAX_LABELS_BYTES // 5) + b"]"
    )
    source = ManifestSource(str(tmp_path / "manifest.json"))
    with pytest.raises(Exception, match=rf"more than {MAX_LABELS_BYTES:,} bytes; allowed at most"):
        source.companion("labels-0123456789abcdef.json")


def _load_test_report(manifest: Path, **changes: object) -> dict:
    measured = {
        "kind": "measured",
        "configuration": {"target": "sagemaker", "instance_type": "ml.g5.xlarge", "instances": 1},
        "duration_s": 100,
        "requests": 240,
        "request_rate_per_s": 2.4,
    }
    report = {
        "traffic": {"service_ms": 5, "zipf": {"total_rate_per_s": 4, "exponent": 1.0}},
        "manifest": str(manifest),
        "users": 2,
        "rate_per_s": None,
        "warmup_s": 0,
        "warmup_requests": 0,
        "measured": measured,
    }
    for path, value in changes.items():
        where = report
        *parents, last = path.split("__")
        for parent in parents:
            where = where[parent]  # type: ignore[assignment]
        where[last] = value
    return report


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"measured__configuration__instances": 10**12},
            "measured.configuration.instances: Input should be less",
        ),
        ({"measured__duration_s": 0}, "measured.duration_s: Input should be greater than 0"),
        ({"rate_per_s": 0}, "rate_per_s: Input should be greater than 0"),
        ({"measured__request_rate_per_s": 0}, "a comparison needs both above 0"),
    ],
)
def test_load_test_reports_with_absurd_figures_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict, message: str
) -> None:
    manifest = write_manifest(tmp_path / "build", manifest_of(5))
    report = tmp_path / "loadtest.json"
    report.write_text(json.dumps(_load_test_report(manifest, **changes)))

    assert main(["plan", "--compare", str(report), "--simulated-requests", "5000"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error
    assert message in error
