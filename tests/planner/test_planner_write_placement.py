"""`plan --write-placement`: only the placement keys of the entries that change are rewritten; every other
line and comment stays; what cannot be rewritten safely is refused in one line and the file is untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from planner_support import manifest_of, write_manifest

from triton_mme.catalog import load_catalog
from triton_mme.cli import main
from triton_mme.core.manifest import Manifest
from triton_mme.planner.write_placement import PlacementWriteError, Wanted, rewrite

GB = 10**9
ENTRY = "    source: torchvision:resnet50\n    weights: random\n    formats: [onnx]\n    max_batch_size: 8\n"
CATALOG = (
    "# The catalog: comments stay where they are.\n"
    "models:\n"
    "  - name: hot  # the busiest\n" + ENTRY + "\n"
    "  # the long tail\n"
    "  - name: cold\n" + ENTRY + "    placement: dedicated\n    dedicated:\n      copies: 2\n"
)


def test_only_the_placement_keys_of_changed_entries_are_rewritten() -> None:
    wanted = {"hot": Wanted("onnx", 3), "cold": Wanted()}
    text, changes, expected = rewrite(CATALOG, wanted, origin="models.yaml")
    assert changes == ["hot: mme -> dedicated (onnx, 3 copies)", "cold: dedicated (?) -> mme"]
    assert yaml.safe_load(text) == expected
    assert expected["models"][0]["dedicated"] == {
        "format": "onnx",
        "copies": 3,
        "min_copies": 1,
        "max_copies": 6,
    }
    assert "placement" not in expected["models"][1] and "dedicated" not in expected["models"][1]
    # Every line but the placement ones is where it was, comments and the blank line included.
    kept = [line for line in CATALOG.splitlines() if "placement" not in line and "dedicated" not in line]
    kept = [line for line in kept if "copies: 2" not in line]
    assert [line for line in text.splitlines() if line in kept] == kept
    assert "  - name: hot  # the busiest\n" + ENTRY + "    placement: dedicated\n" in text
    assert text.endswith("    max_batch_size: 8\n")


def test_an_entry_already_dedicated_in_that_format_keeps_its_own_copies() -> None:
    text, changes, _ = rewrite(CATALOG, {"cold": Wanted("onnx", 5)}, origin="models.yaml")
    assert text == CATALOG
    assert changes == ["cold: kept on its inference component (onnx, its own copies)"]


@pytest.mark.parametrize(
    ("catalog", "message"),
    [
        (
            "models:\n  - {name: hot, source: 'torchvision:resnet50', weights: random, formats: [onnx], "
            "max_batch_size: 8}\n",
            r"^models.yaml: model 'hot' is written in flow style",
        ),
        (
            "models:\n  - name: hot\n" + ENTRY + "    placement: mme  # decided in review\n",
            r"^models.yaml: model 'hot': line 7 carries a comment that rewriting its placement would drop",
        ),
    ],
)
def test_what_cannot_be_rewritten_safely_is_refused(catalog: str, message: str) -> None:
    with pytest.raises(PlacementWriteError, match=message):
        rewrite(catalog, {"hot": Wanted("onnx", 1)}, origin="models.yaml")


def _plan_args(tmp_path: Path, names: dict[int, str] | None = None) -> list[str]:
    built = manifest_of(40, GB)
    renamed = tuple(
        a.model_copy(update={"name": (names or {}).get(i, a.name)}) for i, a in enumerate(built.archives)
    )
    manifest = write_manifest(tmp_path / "build", Manifest(archives=renamed))
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text("service_ms: 8\nzipf:\n  total_rate_per_s: 20\n  exponent: 1.2\n")
    return [
        "plan", "--no-stack", "--traffic", str(traffic), "--manifest", str(manifest),
        "--instance-types", "ml.g4dn.xlarge", "--max-instances", "1", "--min-hit-rate", "0.9",
        "--simulated-requests", "20000",
    ]  # fmt: skip


def _catalog(tmp_path: Path, count: int = 40) -> Path:
    body = "".join(f"  - name: m{i:04d}\n{ENTRY}" for i in range(count))
    path = tmp_path / "models.yaml"
    path.write_text("# ours\nmodels:\n" + body, encoding="utf-8")
    return path


def test_plan_writes_the_recommended_placement_into_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = _catalog(tmp_path)
    out = tmp_path / "plan.json"
    assert main([*_plan_args(tmp_path), "--json", str(out), "--write-placement", str(catalog)]) == 0
    printed = capsys.readouterr().out
    assert "Placement on ml.g4dn.xlarge" in printed and "★ hybrid" in printed
    document = json.loads(out.read_text())["placement"]
    assert document["recommended"] == "hybrid"
    dedicated = {m["model"].split("/")[0] for m in document["models"] if m["placement"] == "dedicated"}
    assert dedicated and "m0000" in dedicated
    written = load_catalog(catalog)
    assert {m.name for m in written.models if m.placement == "dedicated"} == dedicated
    assert catalog.read_text().startswith("# ours\nmodels:\n")
    assert f"{catalog}: m0000: mme -> dedicated (onnx," in printed

    # Run again: nothing to change, the file is left as it is.
    before = catalog.read_text()
    assert main([*_plan_args(tmp_path), "--write-placement", str(catalog)]) == 0
    assert catalog.read_text() == before
    assert f"{catalog}: placements unchanged" in capsys.readouterr().out


def test_a_model_of_a_family_block_gets_its_placement_in_the_familys_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "checkpoints"
    for variant in ("a", "b"):
        (folder / variant).mkdir(parents=True)
        (folder / variant / "config.json").write_text("{}")
    body = "".join(f"  - name: m{i:04d}\n{ENTRY}" for i in range(2, 40))
    catalog = tmp_path / "models.yaml"
    family = (
        "  - family: fam  # our fine-tunes\n    source: checkpoint:checkpoints/{variant}/\n"
        "    variants: [a, b]\n    formats: [onnx]\n    max_batch_size: 8\n"
    )
    catalog.write_text("models:\n" + family + body, encoding="utf-8")
    status = main([*_plan_args(tmp_path, {0: "fam-a", 1: "fam-b"}), "--write-placement", str(catalog)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert f"{catalog}: fam-a: mme -> dedicated (onnx," in printed and "(family fam: overrides.a)" in printed
    written = catalog.read_text()
    assert written.startswith("models:\n  - family: fam  # our fine-tunes\n")
    assert "    overrides:\n      a:\n        placement: dedicated\n" in written
    head = written[: written.index("  - name: m0002")]
    assert head[: head.index("    overrides:")] == "models:\n" + family  # the family's own lines unchanged
    by_name = {m.name: m for m in load_catalog(catalog).models}
    moved = {name for name in ("fam-a", "fam-b") if f"{catalog}: {name}: mme -> dedicated" in printed}
    assert "fam-a" in moved
    assert {name for name in ("fam-a", "fam-b") if by_name[name].placement == "dedicated"} == moved
    # Run again: the member is kept where it is, the file unchanged.
    assert main([*_plan_args(tmp_path, {0: "fam-a", 1: "fam-b"}), "--write-placement", str(catalog)]) == 0
    assert "fam-a: kept on its inference component" in capsys.readouterr().out
    assert catalog.read_text() == written
