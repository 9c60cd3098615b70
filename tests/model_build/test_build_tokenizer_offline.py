"""The offline stand-in tokenizer of a random-weight text model: recorded by the build, usable by the
client, deterministic, within the model's vocabulary; pretrained builds keep the model's own."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from build_support import TINY_ROBERTA
from tokenizers import Tokenizer

from triton_mme.archive_inspection.archive import extract_archive
from triton_mme.catalog import CatalogError
from triton_mme.client.inputs import load_tokenizer, text_batch
from triton_mme.core.golden import GoldenData
from triton_mme.core.manifest import Manifest
from triton_mme.model_build import runtimes
from triton_mme.model_build.tokenizer_offline import corpus_lines, offline_tokenizer_json
from triton_mme.sizing.hf_config import HF_CONFIG_DIR


def test_the_build_records_a_tokenizer_whose_ids_the_model_runs_on(
    built: tuple[Path, Manifest], tmp_path: Path
) -> None:
    out, manifest = built
    record = manifest.find("tiny-roberta", "onnx")
    tokenizer = load_tokenizer((out / record.files["tokenizer"]).read_bytes())
    feeds = text_batch(["The model answered quickly.", "Hello world"], record.inputs, tokenizer)
    length = record.inputs[0].dims[0]
    assert feeds["input_ids"].shape == (2, length)
    assert 0 < feeds["input_ids"].max() < TINY_ROBERTA["vocab_size"]
    # RoBERTa's layout: <s> first, </s> after the text, <pad> (id 1) to the recorded length.
    assert feeds["input_ids"][1, 0] == 0 and feeds["input_ids"][1, -1] == 1
    assert feeds["attention_mask"][1].sum() < length
    model_file = extract_archive(out / record.target_model, tmp_path / "m").model_file
    produced = runtimes.run_onnx(runtimes.onnx_session(model_file), feeds)
    assert np.isfinite(produced["last_hidden_state"]).all()
    # The golden data still replays: the tokenizer changed nothing in the archive.
    GoldenData.from_bytes((out / record.files["golden"]).read_bytes(), where="golden")


def test_the_stand_in_is_deterministic_and_sized_to_the_default_catalogs_model() -> None:
    config = json.loads((HF_CONFIG_DIR / "roberta-large.json").read_text(encoding="utf-8"))
    first = offline_tokenizer_json(config, 512, name="roberta-large")
    assert first == offline_tokenizer_json(config, 512, name="roberta-large")
    tokenizer = Tokenizer.from_str(first.decode("utf-8"))
    assert max(tokenizer.get_vocab().values()) < config["vocab_size"]
    assert len(tokenizer.encode("a sentence").ids) == 512
    assert tokenizer.token_to_id("<pad>") == config["pad_token_id"]


def test_the_corpus_is_the_shipped_sample_without_its_labelling_comments() -> None:
    lines = corpus_lines()
    assert len(lines) > 20 and not any(line.startswith("#") for line in lines)


def test_a_vocabulary_too_small_or_special_ids_elsewhere_are_one_line() -> None:
    with pytest.raises(CatalogError, match=r"'x': hf_config.vocab_size 100 is too small .* at least 261"):
        offline_tokenizer_json({"vocab_size": 100}, 16, name="x")
    with pytest.raises(CatalogError, match=r"hf_config gives <pad> id 0, .* puts it at 1"):
        offline_tokenizer_json({"vocab_size": 1000, "pad_token_id": 0}, 16, name="x")
