"""Turn images, text and .npy files into the input tensors a model's manifest entry declares.

Pictures are prepared with Pillow and numpy alone, following the evaluation transform the build
recorded for the model (resize the short side, center-crop, scale to [0, 1], normalise: torchvision's
`ImageClassification` preset on PIL images). Text is encoded with the `tokenizers` package.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from triton_mme.core.bounded import read_json
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.limits import MAX_HF_CONFIG_BYTES
from triton_mme.core.manifest import ImagePreprocessing, TensorSpec
from triton_mme.core.platform import PLATFORM
from triton_mme.core.samples import NUMPY_DTYPES

# torchvision's ImageNet normalisation and classic resize ratio (256 -> 224), for a manifest entry that
# recorded no preprocessing (an archive added from elsewhere).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DEFAULT_RESIZE_RATIO = 256 / 224
# Pillow refuses images over twice this many pixels and warns above it; both are refused here.
MAX_IMAGE_PIXELS = 89_478_485
TOKENIZER_FILE_NAME = "tokenizer.json"
# Every .npz (numpy's zip of arrays) starts like any zip file.
ZIP_MAGIC = b"PK\x03\x04"
PAD_TOKEN_CANDIDATES = ("<pad>", "[PAD]", "<|pad|>")


class InputError(UserError, ValueError):
    """An input that does not fit the model; the message is one line naming the file or tensor."""


def _numpy_dtype(spec: TensorSpec) -> type[np.generic]:
    if spec.datatype not in NUMPY_DTYPES:
        raise InputError(f"input '{spec.name}': datatype {spec.datatype} cannot be built from this input")
    return NUMPY_DTYPES[spec.datatype]


def image_preprocessing(spec: TensorSpec, recorded: ImagePreprocessing | None) -> ImagePreprocessing:
    """The recorded transform, or ImageNet's at the input's size for an entry that recorded none."""
    if len(spec.dims) != 3 or spec.dims[0] != 3 or min(spec.dims[1:]) < 1:
        raise InputError(
            f"input '{spec.name}' has dims {list(spec.dims)}; an image input needs fixed [3, H, W]"
        )
    crop = (spec.dims[1], spec.dims[2])
    if recorded is not None:
        if recorded.crop_size != crop:
            raise InputError(
                f"input '{spec.name}' is {list(crop)} but the recorded preprocessing crops to "
                f"{list(recorded.crop_size)}"
            )
        return recorded
    return ImagePreprocessing(
        resize_size=round(min(crop) * DEFAULT_RESIZE_RATIO),
        crop_size=crop,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
    )


def _prepare(image: Any, transform: ImagePreprocessing) -> np.ndarray:
    """Resize the short side, center-crop and normalise one RGB picture; [3, H, W] float32."""
    from PIL import Image

    resample = {
        "nearest": Image.Resampling.NEAREST,
        "bilinear": Image.Resampling.BILINEAR,
        "bicubic": Image.Resampling.BICUBIC,
    }[transform.interpolation]
    width, height = image.size
    short, long = sorted((width, height))
    # torchvision's resize of the short side: the long side is truncated, not rounded.
    resized_long = int(transform.resize_size * long / short)
    size = (transform.resize_size, resized_long) if width <= height else (resized_long, transform.resize_size)
    image = image.resize(size, resample=resample)
    crop_h, crop_w = transform.crop_size
    if crop_w > size[0] or crop_h > size[1]:
        raise InputError(f"crop {crop_w}x{crop_h} is larger than the resized picture {size[0]}x{size[1]}")
    left, top = round((size[0] - crop_w) / 2.0), round((size[1] - crop_h) / 2.0)
    image = image.crop((left, top, left + crop_w, top + crop_h))
    pixels = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0
    mean = np.asarray(transform.mean, dtype=np.float32).reshape(3, 1, 1)
    std = np.asarray(transform.std, dtype=np.float32).reshape(3, 1, 1)
    return (pixels - mean) / std


def _unreadable_image(path: Path, error: Exception) -> str:
    """What is wrong with a picture, in words (never an exception's class name)."""
    from PIL import UnidentifiedImageError

    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "a directory, not an image file"
    if path.is_file() and path.stat().st_size == 0:
        return "the file is empty; allowed: an image Pillow reads (JPEG, PNG, WebP, ...)"
    if isinstance(error, UnidentifiedImageError):
        return "not an image format Pillow reads; allowed: JPEG, PNG, WebP, BMP, TIFF, GIF, ..."
    if isinstance(error, OSError) and error.strerror:
        return f"cannot read it ({error.strerror})"
    detail = str(error).strip().splitlines()
    return f"a damaged or truncated image ({detail[0]})" if detail else "a damaged or truncated image"


def image_batch(
    paths: Sequence[Path], spec: TensorSpec, preprocessing: ImagePreprocessing | None
) -> np.ndarray:
    """A [N, 3, H, W] batch in the input's datatype, one row per image file."""
    from PIL import Image, UnidentifiedImageError

    transform = image_preprocessing(spec, preprocessing)
    dtype = _numpy_dtype(spec)
    rows = []
    for path in paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
                with Image.open(path) as image:
                    rows.append(_prepare(image.convert("RGB"), transform))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise InputError(
                f"{path}: the picture has more than {MAX_IMAGE_PIXELS:,} pixels; allowed up to that many "
                "(resize it first)"
            ) from None
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as error:
            raise InputError(f"{path}: {_unreadable_image(path, error)}") from None
    return np.stack(rows).astype(dtype)


def load_tokenizer(source: Path | bytes) -> Any:
    """A `tokenizers.Tokenizer` from tokenizer.json (a file, a directory holding one, or its bytes)."""
    from tokenizers import Tokenizer

    if isinstance(source, bytes):
        try:
            return Tokenizer.from_str(source.decode("utf-8"))
        except Exception as error:
            raise InputError(f"the recorded tokenizer cannot be read ({error.__class__.__name__})") from None
    path = source / TOKENIZER_FILE_NAME if source.is_dir() else source
    if not path.is_file():
        raise InputError(
            f"--tokenizer {source}: no {TOKENIZER_FILE_NAME} there; allowed: a tokenizer.json file or a "
            "directory holding one (e.g. a Hugging Face tokenizer saved with save_pretrained)"
        )
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:
        raise InputError(f"{path}: not a readable tokenizer.json ({error.__class__.__name__})") from None
    if tokenizer.padding is None:
        tokenizer.enable_padding(**_pad_token(tokenizer, path.parent))
    return tokenizer


def _pad_token(tokenizer: Any, directory: Path) -> dict[str, Any]:
    """The padding token a saved Hugging Face tokenizer names, else a conventional one it knows."""
    names: list[str] = []
    for config in ("tokenizer_config.json", "special_tokens_map.json"):
        try:
            value = read_json(directory / config, max_bytes=MAX_HF_CONFIG_BYTES).get("pad_token")
        except (OSError, ValueError, AttributeError):
            continue
        name = value.get("content") if isinstance(value, dict) else value
        if isinstance(name, str):
            names.append(name)
    for name in [*names, *PAD_TOKEN_CANDIDATES]:
        token_id = tokenizer.token_to_id(name)
        if token_id is not None:
            return {"pad_id": token_id, "pad_token": name}
    raise InputError(
        f"{directory}: the tokenizer names no padding token; allowed: one of {PAD_TOKEN_CANDIDATES}"
    )


def text_batch(texts: Sequence[str], specs: Sequence[TensorSpec], tokenizer: Any) -> dict[str, np.ndarray]:
    """Token ids (and attention mask) padded and truncated to the inputs' sequence length."""
    lengths = {spec.dims[-1] for spec in specs if spec.dims}
    length = lengths.pop() if len(lengths) == 1 else -1
    if length > 0:
        tokenizer.enable_truncation(max_length=length)
        padding = dict(tokenizer.padding or {})
        tokenizer.enable_padding(
            pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"), length=length
        )
    encodings = tokenizer.encode_batch(list(texts))
    produced = {
        "input_ids": np.asarray([e.ids for e in encodings]),
        "attention_mask": np.asarray([e.attention_mask for e in encodings]),
        "token_type_ids": np.asarray([e.type_ids for e in encodings]),
    }
    tensors = {}
    for spec in specs:
        if spec.name not in produced:
            raise InputError(f"input '{spec.name}': the tokenizer produces only {', '.join(produced)}")
        tensors[spec.name] = produced[spec.name].astype(_numpy_dtype(spec))
    return tensors


def _fits(shape: tuple[int, ...], spec: TensorSpec) -> bool:
    wanted = (-1, *spec.dims)
    return len(shape) == len(wanted) and all(w in (-1, g) for w, g in zip(wanted, shape, strict=True))


def npy_inputs(
    arguments: Sequence[str],
    specs: Sequence[TensorSpec] | None,
    *,
    max_bytes: int = PLATFORM.limits.sagemaker_max_payload_bytes.value,
) -> dict[str, np.ndarray]:
    """Arrays from `FILE` (single-input models) or `NAME=FILE` arguments, sent with their own dtype.

    An array larger than a request can carry (`max_bytes`) is refused before it is read."""
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
        array = _load_npy(Path(file_name), max_bytes)
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


def _load_npy(path: Path, max_bytes: int) -> np.ndarray:
    """One array from a .npy file, its size checked from the header before any data is read.

    The file is memory-mapped first (numpy reads only the header), so a header declaring terabytes
    costs nothing; an .npz (a zip of arrays) is recognised by its magic bytes, whatever its name.
    """
    try:
        with path.open("rb") as stream:
            magic = stream.read(len(ZIP_MAGIC))
    except OSError as error:
        raise InputError(f"{path}: cannot read it ({error.strerror or error.__class__.__name__})") from None
    if magic == ZIP_MAGIC:
        raise InputError(f"{path}: an .npz archive of arrays; allowed: one .npy array per input (np.save)")
    try:
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        # numpy says "mmap length is greater than file size" for a header that promises more than is there
        raise InputError(f"{path}: not a readable .npy array ({first_line(error)})") from None
    if not isinstance(mapped, np.ndarray):
        raise InputError(f"{path}: not a .npy array; allowed: one .npy array per input (np.save)")
    if mapped.nbytes > max_bytes:
        raise InputError(
            f"{path}: the array is {mapped.nbytes:,} bytes; a request carries at most {max_bytes:,} "
            "(send a smaller batch)"
        )
    return np.array(mapped)
