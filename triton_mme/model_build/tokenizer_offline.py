"""A stand-in tokenizer for a text model built with `weights: random`, trained offline.

A pretrained build records the model's own tokenizer (sources.tokenizer_json). A random-weight build has
no published tokenizer to record and must not download one, yet `triton-mme invoke --text` needs one to
turn text into the token ids the model accepts. This module trains a byte-level BPE tokenizer (the kind
RoBERTa uses) with the `tokenizers` package on a small English sample the project ships
(tokenizer_corpus/), sized to the model's vocabulary and with the special tokens at the ids its config
names. It is NOT the model's real tokenizer: the manifest records it as `tokenizer: offline-sample`
(ArchiveRecord.details), and the client says so whenever it uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triton_mme.catalog import CatalogError

CORPUS_DIR = Path(__file__).parent / "tokenizer_corpus"
# What ArchiveRecord.details["tokenizer"] says for a tokenizer trained here.
OFFLINE_TOKENIZER = "offline-sample"
# A stand-in needs no large vocabulary; a larger one only makes the file bigger.
MAX_VOCABULARY = 2000
BYTE_ALPHABET = 256
# RoBERTa's special tokens and its default ids (transformers' RobertaConfig: bos 0, pad 1, eos 2).
BOS, PAD, EOS, UNK, MASK = "<s>", "<pad>", "</s>", "<unk>", "<mask>"
SPECIAL_TOKENS = (BOS, PAD, EOS, UNK, MASK)


def corpus_lines() -> list[str]:
    """The shipped sample, without its comment lines."""
    lines = []
    for path in sorted(CORPUS_DIR.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                lines.append(line)
    return lines


def _vocabulary_size(hf_config: Mapping[str, Any], name: str) -> int:
    size = int(hf_config.get("vocab_size", MAX_VOCABULARY))
    least = BYTE_ALPHABET + len(SPECIAL_TOKENS)
    if size < least:
        raise CatalogError(
            f"model {name!r}: hf_config.vocab_size {size} is too small for the offline stand-in tokenizer "
            f"(a byte-level BPE); allowed at least {least}, or build with pretrained weights"
        )
    return min(size, MAX_VOCABULARY)


def _check_special_ids(tokenizer: Any, hf_config: Mapping[str, Any], name: str) -> None:
    """The ids the model's config gives its special tokens are the ids the tokenizer produces."""
    expected = {BOS: hf_config.get("bos_token_id", 0), PAD: hf_config.get("pad_token_id", 1)}
    expected[EOS] = hf_config.get("eos_token_id", 2)
    for token, wanted in expected.items():
        got = tokenizer.token_to_id(token)
        if wanted is not None and got != wanted:
            raise CatalogError(
                f"model {name!r}: hf_config gives {token} id {wanted}, the offline stand-in tokenizer puts "
                f"it at {got}; allowed: RoBERTa's ids (bos 0, pad 1, eos 2), or build with pretrained weights"
            )


def offline_tokenizer_json(hf_config: Mapping[str, Any], sequence_length: int, *, name: str) -> bytes:
    """tokenizer.json of a byte-level BPE trained on the shipped sample, padding and truncating to
    `sequence_length`, its vocabulary within the model's. Deterministic: the same bytes every build."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_vocabulary_size(hf_config, name),
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus_lines(), trainer=trainer)
    _check_special_ids(tokenizer, hf_config, name)
    # The trainer puts the special tokens first, in SPECIAL_TOKENS' order: their ids are their positions.
    ids = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    tokenizer.post_processor = processors.RobertaProcessing((EOS, ids[EOS]), (BOS, ids[BOS]))
    tokenizer.enable_truncation(max_length=sequence_length)
    tokenizer.enable_padding(length=sequence_length, pad_id=ids[PAD], pad_token=PAD)
    return tokenizer.to_str().encode("utf-8")
