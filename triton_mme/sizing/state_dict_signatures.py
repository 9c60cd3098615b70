"""What a state dict of each torchvision classification architecture looks like, recorded so that synthesis
can tell a checkpoint of the wrong architecture from its safetensors header alone, without PyTorch.

For each architecture: the sha256 of its body (every tensor's name and shape, sorted, except the classifier
head's), and the head's tensors with their class dimension (whose size is the fine-tune's own number of
classes). A fine-tune keeps the body and changes the head's class count; anything else is another model.

Recorded for the torchvision of requirements-torch.txt by
`python -m triton_mme.sizing.state_dict_signatures --write` (models built on PyTorch's meta device: no
weights allocated); tests/model_build/test_checkpoint_sources.py compares the file with the installed one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

SIGNATURES_FILE = Path(__file__).parent / "torchvision_state_dicts.json"
PROBE_CLASSES = (1000, 7)


def body_digest(shapes: Mapping[str, Sequence[int]], head: Mapping[str, Any]) -> str:
    lines = sorted(
        f"{name}:{'x'.join(str(d) for d in shape)}" for name, shape in shapes.items() if name not in head
    )
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@cache
def recorded_signatures() -> dict[str, dict[str, Any]]:
    signatures: dict[str, dict[str, Any]] = json.loads(SIGNATURES_FILE.read_text(encoding="utf-8"))
    return signatures


def architecture_signature(name: str) -> dict[str, Any]:
    """The signature of one architecture, built on the meta device (imports torchvision)."""
    import torch
    import torchvision

    shapes = []
    for classes in PROBE_CLASSES:
        try:
            with torch.device("meta"):
                model = torchvision.models.get_model(name, weights=None, num_classes=classes)
        except NotImplementedError:  # a builder that computes its widths with tensors (RegNet)
            model = torchvision.models.get_model(name, weights=None, num_classes=classes)
        shapes.append({k: tuple(v.shape) for k, v in model.state_dict().items()})
        del model
    wide, narrow = shapes
    head: dict[str, dict[str, Any]] = {}
    for key, shape in wide.items():
        if shape != narrow[key]:
            axis = next(i for i, (a, b) in enumerate(zip(shape, narrow[key], strict=True)) if a != b)
            head[key] = {"shape": list(shape), "class_axis": axis}
    return {"body": body_digest(wide, head), "head": head}


def classification_architectures() -> list[str]:
    import torchvision

    return sorted(torchvision.models.list_models(module=torchvision.models))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {SIGNATURES_FILE.name}")
    args = parser.parse_args(argv)
    signatures = {name: architecture_signature(name) for name in classification_architectures()}
    text = json.dumps(signatures, indent=1, sort_keys=True) + "\n"
    if args.write:
        SIGNATURES_FILE.write_text(text, encoding="utf-8")
    print(f"{len(signatures)} architectures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
