"""Disk used by a family of own checkpoints after two syntheses (one catalog change between them) and a build.

    python -m benchmarks.disk_footprint --work /tmp/disk [--count 40] [--architecture resnet18] [--classes 5]

Run from a checkout (its app.py and build code are measured): writes `count` state dicts into
<work>/own/checkpoints/fleet, a family catalog and its lock, synthesizes into <work>/cdk.out, changes
max_batch_size, synthesizes again, builds into <work>/build (under `flock /tmp/model-build.lock`), and prints
the bytes in each place as one JSON line: what `cdk.out` and the build folder add to the checkpoints'
folder (a hard-linked file counts once, as it takes disk once). The checkpoints are written once and reused
by later runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

CATALOG = """models:
  - family: fleet
    source: checkpoint:checkpoints/fleet/{{variant}}.safetensors
    architecture: torchvision:{architecture}
    variants: listed
    formats: [onnx]
    max_batch_size: {batch}
    input_shape: [3, 64, 64]
"""


def size_of(*paths: Path) -> int:
    """Bytes of `paths` together (one `du -scb`: a file hard-linked in two of them is counted once)."""
    present = [str(path) for path in paths if path.exists()]
    if not present:
        return 0
    done = subprocess.run(["du", "-scb", *present], capture_output=True, text=True, check=True)
    return int(done.stdout.splitlines()[-1].split()[0])


def added_to(base: Path, path: Path) -> int:
    """The bytes `path` adds to `base`: what it takes beyond files it shares with it (hard links)."""
    return size_of(base, path) - size_of(base)


def run(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--work", type=Path, required=True, help="scratch folder (its cdk.out and build are replaced)"
    )
    parser.add_argument("--count", type=int, default=40, help="checkpoints (default 40)")
    parser.add_argument("--architecture", default="resnet18", help="torchvision model (default resnet18)")
    parser.add_argument("--classes", type=int, default=5, help="classes of each head (default 5)")
    args = parser.parse_args()
    own = args.work / "own"
    folder = own / "checkpoints" / "fleet"
    if len(list(folder.glob("*.safetensors"))) != args.count:
        from benchmarks.checkpoints import write_state_dicts

        shutil.rmtree(folder, ignore_errors=True)
        write_state_dicts(folder, args.count, architecture=args.architecture, classes=args.classes)
    catalog = own / "models.yaml"
    out, build = args.work / "cdk.out", args.work / "build"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(build, ignore_errors=True)
    python = sys.executable
    cdk = ["npx", "--no-install", "cdk", "--no-notices", "synth", "--quiet", "-o", str(out)]
    # 40 ResNet-18 exports are estimated past the default time limits; longer ones change no asset.
    context = [
        "-c",
        f"modelCatalog={catalog}",
        "-c",
        "buildTimeoutMinutes=60",
        "-c",
        "servingCheckTimeoutMinutes=60",
    ]
    catalog.write_text(CATALOG.format(architecture=args.architecture, batch=4))
    run([python, "-m", "triton_mme", "lock", "--catalog", str(catalog)])
    run([*cdk, *context])
    first = added_to(folder, out)
    catalog.write_text(CATALOG.format(architecture=args.architecture, batch=8))
    run([*cdk, *context])
    second = added_to(folder, out)
    build_command = [python, "-m", "triton_mme", "build", "--catalog", str(catalog), "--out", str(build)]
    run(["flock", "/tmp/model-build.lock", *build_command, "--no-progress"])
    figures = {
        "checkpoints": size_of(folder),
        "cdk_out_after_first_synth": first,
        "cdk_out_after_second_synth": second,
        "build_sources": added_to(folder, build / ".sources"),
        "build_total": added_to(folder, build),
    }
    figures["total_besides_checkpoints"] = second + figures["build_total"]
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
