"""Image preprocessing, tokenisation, .npy inputs and top-5 labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from client_support import TOKEN_IDS, write_image

from triton_mme.client.inputs import (
    InputError,
    image_batch,
    image_preprocessing,
    load_tokenizer,
    npy_inputs,
    text_batch,
)
from triton_mme.client.labels import read_labels, top_k
from triton_mme.core.manifest import ImagePreprocessing, TensorSpec
from triton_mme.model_build.sources import image_companions

IMAGE = TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224))
RESNET50 = ImagePreprocessing(
    resize_size=232,
    crop_size=(224, 224),
    mean=(0.485, 0.456, 0.406),
    std=(0.229, 0.224, 0.225),
    interpolation="bilinear",
)


def test_the_build_records_the_torchvision_transform_at_the_manifest_size() -> None:
    # ResNet-50's default weights evaluate at resize 232, crop 224.
    assert image_companions("resnet50", (3, 224, 224)).preprocessing == RESNET50
    smaller = image_companions("resnet50", (3, 112, 112)).preprocessing
    assert smaller is not None and (smaller.resize_size, smaller.crop_size) == (116, (112, 112))
    labels = json.loads(image_companions("resnet50", (3, 224, 224)).files["labels"])
    assert len(labels) == 1000 and labels[281] == "tabby"


def test_an_entry_without_recorded_preprocessing_gets_imagenets() -> None:
    assert image_preprocessing(IMAGE, None).resize_size == 256
    with pytest.raises(InputError, match=r"dims \[3, -1, -1\]; an image input needs fixed \[3, H, W\]"):
        image_preprocessing(TensorSpec(name="input", datatype="FP32", dims=(3, -1, -1)), RESNET50)
    with pytest.raises(
        InputError, match=r"is \[64, 64\] but the recorded preprocessing crops to \[224, 224\]"
    ):
        image_preprocessing(TensorSpec(name="input", datatype="FP32", dims=(3, 64, 64)), RESNET50)


@pytest.mark.parametrize("size", [(320, 240), (199, 401), (224, 224)])
def test_pillow_preprocessing_matches_torchvisions_preset(tmp_path: Path, size: tuple[int, int]) -> None:
    """The client's numpy/Pillow transform equals the weights' own preset on the same picture."""
    from PIL import Image
    from torchvision.models import ResNet50_Weights

    path = write_image(tmp_path / "photo.png", size=size)
    with Image.open(path) as image:
        expected = ResNet50_Weights.DEFAULT.transforms()(image.convert("RGB")).numpy()

    produced = image_batch([path], IMAGE, RESNET50)[0]

    np.testing.assert_allclose(produced, expected, atol=1e-5)


def test_image_batch_is_resized_cropped_and_normalised(tmp_path: Path) -> None:
    flat = write_image(tmp_path / "grey.png")
    from PIL import Image

    Image.new("RGB", (500, 300), color=(124, 116, 104)).save(flat)  # the ImageNet mean, roughly
    other = write_image(tmp_path / "noise.jpg", size=(200, 400))

    batch = image_batch([flat, other], IMAGE, RESNET50)

    assert batch.shape == (2, 3, 224, 224) and batch.dtype == np.float32
    # A mean-coloured image normalises to about zero in every channel.
    np.testing.assert_allclose(batch[0].mean(axis=(1, 2)), 0.0, atol=0.02)
    assert batch[1].std() > 0.5


def test_image_batch_takes_the_inputs_datatype(image_path: Path) -> None:
    half = TensorSpec(name="input", datatype="FP16", dims=(3, 64, 64))
    assert image_batch([image_path], half, None).dtype == np.float16


def test_an_unreadable_image_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    with pytest.raises(InputError, match=r"broken\.jpg: not an image format Pillow reads; allowed: JPEG"):
        image_batch([broken], IMAGE, RESNET50)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda path: path.write_bytes(b""), "the file is empty; allowed: an image Pillow reads"),
        (lambda path: None, "no such file"),
        (lambda path: path.mkdir(), "a directory, not an image file"),
    ],
    ids=["empty", "missing", "directory"],
)
def test_an_empty_or_missing_image_says_what_is_wrong_without_a_class_name(
    tmp_path: Path, make: Any, message: str
) -> None:
    picture = tmp_path / "cat.jpg"
    make(picture)
    with pytest.raises(InputError) as caught:
        image_batch([picture], IMAGE, RESNET50)
    assert str(caught.value) == f"{picture}: {message}" or str(caught.value).startswith(
        f"{picture}: {message}"
    )
    assert "Error" not in str(caught.value)


def test_text_is_tokenised_to_the_manifest_length(tokenizer_dir: Path) -> None:
    specs = [TensorSpec(name=n, datatype="INT64", dims=(6,)) for n in ("input_ids", "attention_mask")]

    tensors = text_batch(
        ["hello world", "triton says hello to the world and more"], specs, load_tokenizer(tokenizer_dir)
    )

    ids, mask = tensors["input_ids"], tensors["attention_mask"]
    assert ids.dtype == mask.dtype == np.int64
    assert ids.shape == mask.shape == (2, 6)
    pad, unk = TOKEN_IDS["<pad>"], TOKEN_IDS["<unk>"]
    assert ids[0].tolist() == [TOKEN_IDS["hello"], TOKEN_IDS["world"], pad, pad, pad, pad]
    assert mask[0].tolist() == [1, 1, 0, 0, 0, 0]
    assert ids[1].tolist() == [TOKEN_IDS["triton"], unk, TOKEN_IDS["hello"], unk, unk, TOKEN_IDS["world"]]
    assert mask[1].tolist() == [1] * 6


def test_a_missing_tokenizer_or_input_is_one_line(tokenizer_dir: Path, tmp_path: Path) -> None:
    specs = [TensorSpec(name="token_type_ids", datatype="INT64", dims=(6,))]
    specs = [TensorSpec(name="pixel_values", datatype="INT64", dims=(6,))]
    with pytest.raises(
        InputError,
        match="'pixel_values': the tokenizer produces only input_ids, attention_mask, token_type_ids",
    ):
        text_batch(["hello"], specs, load_tokenizer(tokenizer_dir))
    with pytest.raises(InputError, match=r"no tokenizer\.json there") as caught:
        load_tokenizer(tmp_path / "nowhere")
    assert "\n" not in str(caught.value)
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(InputError, match=r"broken\.json: not a readable tokenizer\.json"):
        load_tokenizer(tmp_path / "broken.json")


def test_npy_arrays_are_checked_against_the_inputs(tmp_path: Path) -> None:
    array = np.ones((2, 3, 224, 224), dtype=np.float32)
    np.save(tmp_path / "batch.npy", array)
    np.save(tmp_path / "doubles.npy", array.astype(np.float64))
    np.save(tmp_path / "small.npy", array[:, :, :10])

    assert npy_inputs([str(tmp_path / "batch.npy")], [IMAGE])["input"].tobytes() == array.tobytes()
    assert set(npy_inputs([f"anything={tmp_path / 'doubles.npy'}"], None)) == {"anything"}
    with pytest.raises(InputError, match="dtype float64, but input 'input' is FP32"):
        npy_inputs([str(tmp_path / "doubles.npy")], [IMAGE])
    with pytest.raises(
        InputError, match=r"shape \[2, 3, 10, 224\], but input 'input' takes \[batch, 3, 224, 224\]"
    ):
        npy_inputs([str(tmp_path / "small.npy")], [IMAGE])
    with pytest.raises(InputError, match="name the input as NAME=FILE"):
        npy_inputs([str(tmp_path / "batch.npy")], None)
    with pytest.raises(InputError, match="has no input 'pixels'; inputs: input"):
        npy_inputs([f"pixels={tmp_path / 'batch.npy'}"], [IMAGE])
    with pytest.raises(InputError, match=r"missing\.npy: cannot read it \(No such file or directory\)"):
        npy_inputs([str(tmp_path / "missing.npy")], [IMAGE])


def test_top_5_uses_imagenet_labels_and_softmax() -> None:
    scores = np.zeros((2, 1000), dtype=np.float32)
    scores[0, 281], scores[0, 285] = 10.0, 8.0
    scores[1, 1] = 5.0
    names = read_labels(image_companions("resnet50", (3, 224, 224)).files["labels"], "labels.json")

    rows = top_k(scores, names, k=5)

    assert names is not None and len(names) == 1000
    assert [p.label for p in rows[0][:2]] == ["tabby", "Egyptian cat"]
    assert rows[0][0].class_index == 281
    assert rows[0][0].probability == pytest.approx(np.exp(10) / (np.exp(10) + np.exp(8) + 998), rel=1e-6)
    assert rows[1][0].label == "goldfish" and len(rows[1]) == 5


def test_top_5_without_matching_labels_names_class_numbers() -> None:
    with pytest.raises(InputError, match=r"labels\.json: not a labels file; allowed: a JSON list"):
        read_labels(b'{"0": "tabby"}', "labels.json")
    rows = top_k(np.array([[0.1, 0.9, 0.0]], dtype=np.float16), ["a", "b"], k=2)
    assert [p.label for p in rows[0]] == ["class 1", "class 0"]
