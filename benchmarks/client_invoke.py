"""8. The endpoint client against a plain script: one picture through InvokeEndpoint, top 5 printed.

Both run as a user runs them, in a fresh process each time: `triton-mme invoke --endpoint ... --image`
and benchmarks/plain_invoke.py (boto3 + Pillow + tritonclient, no project code). boto3 is pointed at a
loopback stand-in for SageMaker (benchmarks/invoke_stub.py) through AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME,
so request signing, encoding, the HTTP exchange, decoding and labelling are all real.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.invoke_stub import InvokeStub
from benchmarks.results import Section
from triton_mme.core.manifest import ArchiveRecord, Manifest, TensorSpec
from triton_mme.core.naming import companion_file_name

NAME = "client_invoke"
TITLE = "8. Invoke client vs a plain boto3 + Pillow + tritonclient script"
ENDPOINT = "benchmark-endpoint"
TARGET_MODEL = "resnet50-onnx-0123456789abcdef.tar.gz"
PLAIN_SCRIPT = REPO_ROOT / "benchmarks" / "plain_invoke.py"
PROJECT_LINE = re.compile(r"^\s+\d+\.\s+[\d.]+%\s+(?P<label>.+) \(\d+\)$")
PLAIN_LINE = re.compile(r"^\d+\. [\d.]+% (?P<label>.+)$")


def write_inputs(directory: Path) -> tuple[Path, Path, Path]:
    """A manifest as the build writes it for ResNet-50 (preprocessing, labels file) and a 640x480 photo."""
    from PIL import Image

    from triton_mme.model_build.sources import image_companions

    directory.mkdir(parents=True, exist_ok=True)
    companions = image_companions("resnet50", (3, 224, 224))
    labels = companions.files["labels"]
    labels_path = directory / companion_file_name("labels", hashlib.sha256(labels).hexdigest())
    labels_path.write_bytes(labels)
    record = ArchiveRecord(
        name="resnet50",
        format="onnx",
        target_model=TARGET_MODEL,
        sha256="0" * 64,
        size_bytes=1,
        source="torchvision:resnet50",
        weights="pretrained",
        max_batch_size=8,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(1000,)),),
        preprocessing=companions.preprocessing,
        files={"labels": labels_path.name},
    )
    manifest_path = directory / "manifest.json"
    manifest_path.write_text(Manifest(archives=(record,)).to_json(), encoding="utf-8")
    pixels = np.random.default_rng(0).integers(0, 256, size=(480, 640, 3), dtype=np.uint8)
    image_path = directory / "photo.jpg"
    Image.fromarray(pixels).save(image_path, quality=90)
    return manifest_path, labels_path, image_path


def child_environment(endpoint_url: str) -> dict[str, str]:
    """Credentials and region that sign requests, and no AWS configuration of this machine."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID="benchmark",
        AWS_SECRET_ACCESS_KEY="benchmark",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME=endpoint_url,
    )
    return env


def measure_command(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Wall time and peak resident memory of one run, with its output lines."""
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.measured_child", *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
        check=True,
    )
    *output, last = completed.stdout.strip().splitlines()
    report: dict[str, Any] = json.loads(last)
    if report["returncode"] != 0:
        reason = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {reason}")
    report["output"] = output
    return report


def top_labels(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    return [match["label"] for line in lines if (match := pattern.match(line))]


def run(ctx: RunContext, section: Section) -> None:
    manifest, labels, image = write_inputs(ctx.scratch / "invoke")
    commands = {
        "project": [
            sys.executable, "-m", "triton_mme", "invoke", "--endpoint", ENDPOINT, "--model", "resnet50",
            "--manifest", str(manifest), "--image", str(image),
        ],
        "plain": [sys.executable, str(PLAIN_SCRIPT), ENDPOINT, TARGET_MODEL, str(image), str(labels)],
    }  # fmt: skip
    repetitions = ctx.pick(7, 2)
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in commands}
    with InvokeStub() as stub:
        env = child_environment(stub.url)
        for command in commands.values():
            measure_command(command, env)  # untimed: warms the page cache for both sides alike
        for _ in range(repetitions):
            for side, command in commands.items():
                runs[side].append(measure_command(command, env))
        from benchmarks.metrics_overhead import measure as measure_metrics

        measure_metrics(section, stub.url, ctx.scratch, rounds=ctx.pick(10, 3), requests=ctx.pick(100, 20))
    project = top_labels(runs["project"][0]["output"], PROJECT_LINE)
    plain = top_labels(runs["plain"][0]["output"], PLAIN_LINE)
    if len(project) != 5 or project != plain:
        raise RuntimeError(f"the two clients disagree on the top 5: {project} vs {plain}")

    labels_by_side = {"project": "triton-mme invoke", "plain": "plain boto3 + Pillow + tritonclient"}
    for side, label in labels_by_side.items():
        section.add_median(f"{side}.time", f"{label}: wall time", [r["seconds"] for r in runs[side]], "s")
    for side, label in labels_by_side.items():
        section.add_median(
            f"{side}.peak", f"{label}: peak memory", [r["peak_rss_mb"] for r in runs[side]], "MB"
        )
    section.ratio("time", "triton-mme invoke / plain script, wall time", "project.time", "plain.time")
    section.ratio("peak", "triton-mme invoke / plain script, peak memory", "project.peak", "plain.peak")
    section.target("Client wall time vs the plain script", "time", "<=", 1.5)
    section.target("Client peak memory", "project.peak", "<=", 150.0)
    section.chart = ["project.time", "plain.time"]
    section.settings["Top 5 (both)"] = ", ".join(project)
    section.notes.append(
        f"Median of {repetitions} fresh processes per side, sides interleaved, after one untimed run each. "
        "Peak memory is each process's maximum resident set (getrusage). InvokeEndpoint goes to a loopback "
        "stand-in that returns fixed logits (benchmarks/invoke_stub.py); the picture is 640x480 JPEG."
    )
