"""What a first user of `invoke` meets: a dry run that loads no AWS SDK, a warning on random weights."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from triton_mme.client.invoke import random_weights_warning, resolve_target
from triton_mme.client.manifest_source import ManifestSource

REPO_ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from triton_mme.cli import main
status = main(sys.argv[1:])
print(status, sorted(m for m in ("botocore", "boto3", "torch") if m in sys.modules))
"""


def test_a_dry_run_imports_no_aws_sdk(manifest_path: Path, image_path: Path, tmp_path: Path) -> None:
    argv = [
        "invoke",
        "--dry-run",
        str(tmp_path / "out"),
        "--model",
        "resnet50",
        "--manifest",
        str(manifest_path),
    ]
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv, "--image", str(image_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.splitlines()[-1] == "0 []", result.stderr
    assert (tmp_path / "out" / "body.bin").stat().st_size > 0


def test_a_random_weight_archive_is_called_out_and_a_pretrained_one_is_not(manifest_path: Path) -> None:
    source = ManifestSource(str(manifest_path))
    image = resolve_target(source, model="resnet50")
    assert image.record is not None and image.record.weights == "random"
    assert random_weights_warning(image) == (
        "warning: model 'resnet50' was built with random weights (weights=random): its scores are noise and "
        "the labels only name classes"
    )
    text = random_weights_warning(resolve_target(source, model="roberta-large"), text=True)
    assert text is not None and "its tokenizer is the offline stand-in, not the model's own" in text
    pretrained = image.record.model_copy(update={"weights": "pretrained"})
    assert random_weights_warning(type(image)(image.target_model, pretrained, source)) is None
