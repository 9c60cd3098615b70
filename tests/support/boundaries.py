"""Run code in a fresh interpreter and see which modules it loaded (package-boundary tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_CORE = ("torch", "torchvision", "transformers", "onnxruntime", "boto3", "botocore")
FORBIDDEN_IN_CLIENT = ("torch", "torchvision", "transformers", "onnxruntime")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` in the project root."""
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=True,
    )
    return set(result.stdout.split())
