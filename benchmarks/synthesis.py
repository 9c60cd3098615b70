"""5. Synthesis at scale: `cdk synth` wall time and resources per template for catalogs of 1, 100 and
1,000 generated models (random weights, ONNX only). The endpoint must not grow with the catalog.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.results import Section

NAME = "synth"
TITLE = "5. Synthesis at scale: cdk synth per catalog size"
CATALOG_SIZES = (1, 100, 1000)
CDK = ("npx", "--no-install", "cdk", "--no-notices")


def _models(size: int) -> str:
    return f"{size:,} model" + ("" if size == 1 else "s")


def generated_catalog(size: int) -> dict[str, object]:
    return {
        "models": [
            {
                "name": f"model-{index:04d}",
                "source": "torchvision:resnet18",
                "weights": "random",
                "formats": ["onnx"],
                "max_batch_size": 8,
            }
            for index in range(size)
        ]
    }


def synth(catalog: Path, out_dir: Path) -> float:
    """Seconds of one `cdk synth` of the app with this catalog; raises with CDK's last error line."""
    env = dict(os.environ, CDK_DISABLE_VERSION_CHECK="1")
    env["PATH"] = f"{REPO_ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    command = [*CDK, "synth", "--quiet", "-c", f"modelCatalog={catalog}", "-o", str(out_dir)]
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or ["no output"]
        reason = next((line for line in lines if line.lower().startswith("error")), lines[-1])
        raise RuntimeError(f"cdk synth with {catalog.name} failed: {reason}")
    return elapsed


def resource_counts(out_dir: Path) -> dict[str, int]:
    """Resources per stack template in a cloud assembly."""
    counts = {}
    for template in sorted(out_dir.glob("*.template.json")):
        resources = json.loads(template.read_text(encoding="utf-8")).get("Resources", {})
        counts[template.name.removesuffix(".template.json")] = len(resources)
    return counts


def run(ctx: RunContext, section: Section) -> None:
    repetitions = ctx.pick(3, 1)
    folder = ctx.scratch / "synth"
    # The app accepts only catalogs inside the project (the build runner gets the project's source).
    with tempfile.TemporaryDirectory(prefix="synth-", dir=_catalog_parent()) as catalog_dir:
        _run(ctx, section, folder, Path(catalog_dir), repetitions)


def _catalog_parent() -> Path:
    parent = REPO_ROOT / "build" / "benchmarks"
    parent.mkdir(parents=True, exist_ok=True)
    return parent


def _run(ctx: RunContext, section: Section, folder: Path, catalog_dir: Path, repetitions: int) -> None:
    catalogs = {}
    for size in CATALOG_SIZES:
        catalogs[size] = catalog_dir / f"catalog-{size}.yaml"
        catalogs[size].write_text(yaml.safe_dump(generated_catalog(size)), encoding="utf-8")
    seconds: dict[int, list[float]] = {size: [] for size in CATALOG_SIZES}
    counts: dict[int, dict[str, int]] = {}
    for repetition in range(repetitions):
        # Rotate the order so that no size always runs first (cold file caches, background load).
        shift = repetition % len(CATALOG_SIZES)
        for size in CATALOG_SIZES[shift:] + CATALOG_SIZES[:shift]:
            out_dir = folder / f"out-{size}-{repetition}"
            seconds[size].append(synth(catalogs[size], out_dir))
            counts[size] = resource_counts(out_dir)
    for size in CATALOG_SIZES:
        section.add_median(f"synth.{size}", f"cdk synth, {_models(size)}", seconds[size], "s")
    for size in CATALOG_SIZES:
        for stack, count in counts[size].items():
            section.add(
                f"resources.{size}.{stack}", f"{stack} resources, {_models(size)}", count, "resources"
            )
        section.add(
            f"resources.{size}",
            f"All template resources, {_models(size)}",
            sum(counts[size].values()),
            "resources",
        )
    largest, smallest = CATALOG_SIZES[-1], CATALOG_SIZES[0]
    section.ratio(
        "time",
        f"Synth time {_models(largest)} / {_models(smallest)}",
        f"synth.{largest}",
        f"synth.{smallest}",
    )
    section.ratio(
        "resources",
        f"Resources {_models(largest)} / {_models(smallest)}",
        f"resources.{largest}",
        f"resources.{smallest}",
    )
    section.target(f"Synthesis time, {largest:,} vs {smallest} model", "time", "<=", 1.2)
    section.target(f"Template resources, {largest:,} vs {smallest} model", "resources", "==", 1.0)
    section.chart = [f"synth.{size}" for size in CATALOG_SIZES]
    section.notes.append(
        f"Wall time of `{' '.join(CDK)} synth --quiet -c modelCatalog=<catalog> -o <dir>`, median of "
        f"{repetitions} run(s) per size, sizes interleaved in rotating order; includes Node and Python "
        "start-up and cdk-nag."
    )
