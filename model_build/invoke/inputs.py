"""Turn images, text and .npy files into the input tensors a model's manifest entry declares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model_build.manifest import TensorSpec
from model_build.samples import NUMPY_DTYPES

# torchvision's ImageNet normalisation, used when the source names no torchvision weights.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# torchvision's classic recipe: resize the short side to 256, crop 224 (ratio kept for other sizes).
DEFAULT_RESIZE_RATIO = 256 / 224


class InputError(ValueError):
    """An input that does not fit the model; the message is one line naming the file or tensor."""


@dataclass(frozen=True)
class ImageTransform:
    """The evaluation transform of torchvision's classification weights: resize, center crop, normalise."""

    resize_size: int
    crop_size: tuple[int, int]
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    interpolation: str = "bilinear"


def _numpy_dtype(spec: TensorSpec) -> type[np.generic]:
    if spec.datatype not in NUMPY_DTYPES:
        raise InputError(f"input '{spec.name}': datatype {spec.datatype} cannot be built from this input")
    return NUMPY_DTYPES[spec.datatype]


def image_transform(spec: TensorSpec, source: str) -> ImageTransform:
    """The transform of the source's torchvision weights, scaled to the input's height and width."""
    if len(spec.dims) != 3 or spec.dims[0] != 3 or min(spec.dims[1:]) < 1:
        raise InputError(
            f"input '{spec.name}' has dims {list(spec.dims)}; an image input needs fixed [3, H, W]"
        )
    crop = (spec.dims[1], spec.dims[2])
    kind, _, model = source.partition(":")
    if kind == "torchvision":
        import torchvision

        try:
            preset = torchvision.models.get_model_weights(model).DEFAULT.transforms()
        except ValueError:  # a torchvision model name this version does not know
            preset = None
        if preset is not None:
            scale = preset.resize_size[0] / preset.crop_size[0]
            return ImageTransform(
                round(min(crop) * scale),
                crop,
                tuple(preset.mean),
                tuple(preset.std),
                preset.interpolation.value,
            )
    return ImageTransform(round(min(crop) * DEFAULT_RESIZE_RATIO), crop)


def image_batch(paths: Sequence[Path], spec: TensorSpec, source: str) -> np.ndarray:
    """A [N, 3, H, W] batch in the input's datatype, one row per image file."""
    import torch
    from PIL import Image, UnidentifiedImageError
    from torchvision.transforms import v2

    settings = image_transform(spec, source)
    transform = v2.Compose(
        [
            v2.ToImage(),
            v2.Resize(
                settings.resize_size,
                interpolation=v2.InterpolationMode(settings.interpolation),
                antialias=True,
            ),
            v2.CenterCrop(list(settings.crop_size)),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(mean=list(settings.mean), std=list(settings.std)),
        ]
    )
    rows = []
    for path in paths:
        try:
            with Image.open(path) as image:
                rows.append(transform(image.convert("RGB")).numpy())
        except (OSError, UnidentifiedImageError) as error:
            raise InputError(f"{path}: not a readable image ({error.__class__.__name__})") from None
    return np.stack(rows).astype(_numpy_dtype(spec))


def text_batch(texts: Sequence[str], specs: Sequence[TensorSpec], tokenizer: str) -> dict[str, np.ndarray]:
    """Token ids (and attention mask) padded and truncated to the inputs' sequence length."""
    from transformers import AutoTokenizer

    try:
        loaded = AutoTokenizer.from_pretrained(tokenizer)
    except (OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(
            f"cannot load the tokenizer '{tokenizer}' ({reason}); pass --tokenizer DIR"
        ) from None
    lengths = {spec.dims[-1] for spec in specs if spec.dims}
    length = lengths.pop() if len(lengths) == 1 else -1
    encoded = loaded(
        list(texts),
        padding="max_length" if length > 0 else "longest",
        truncation=True,
        max_length=length if length > 0 else None,
        return_tensors="np",
    )
    tensors = {}
    for spec in specs:
        if spec.name not in encoded:
            produced = ", ".join(sorted(encoded.keys()))
            raise InputError(f"input '{spec.name}': the tokenizer produces only {produced}")
        tensors[spec.name] = np.asarray(encoded[spec.name]).astype(_numpy_dtype(spec))
    return tensors


def _fits(shape: tuple[int, ...], spec: TensorSpec) -> bool:
    wanted = (-1, *spec.dims)
    return len(shape) == len(wanted) and all(w in (-1, g) for w, g in zip(wanted, shape, strict=True))


def npy_inputs(arguments: Sequence[str], specs: Sequence[TensorSpec] | None) -> dict[str, np.ndarray]:
    """Arrays from `FILE` (single-input models) or `NAME=FILE` arguments, sent with their own dtype."""
    tensors: dict[str, np.ndarray] = {}
    by_name = {spec.name: spec for spec in specs or ()}
    for argument in arguments:
        name, separator, file_name = argument.partition("=")
        if not separator:
            name, file_name = "", argument
            if len(by_name) != 1:
                known = ", ".join(by_name) or "unknown without a manifest entry"
                raise InputError(f"--npy {argument}: name the input as NAME=FILE (inputs: {known})")
            name = next(iter(by_name))
        try:
            array = np.load(file_name, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise InputError(f"{file_name}: not a readable .npy array ({error.__class__.__name__})") from None
        spec = by_name.get(name)
        if by_name and spec is None:
            raise InputError(
                f"--npy {argument}: the model has no input '{name}'; inputs: {', '.join(by_name)}"
            )
        if spec is not None:
            if array.dtype != np.dtype(_numpy_dtype(spec)):
                raise InputError(f"{file_name}: dtype {array.dtype}, but input '{name}' is {spec.datatype}")
            if not _fits(array.shape, spec):
                raise InputError(
                    f"{file_name}: shape {list(array.shape)}, but input '{name}' takes [batch, "
                    f"{', '.join(map(str, spec.dims))}]"
                )
        tensors[name] = array
    missing = sorted(set(by_name) - set(tensors))
    if missing:
        raise InputError(f"--npy: no array for input(s) {', '.join(missing)}")
    return tensors
