"""Every value the archive policy admits in a config.pbtxt has a bound: an archive asks a server for no more
than a catalog entry could (instances, threads, queue delay, batch sizes, warm-up shapes and bytes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import text_format
from hostile_archives import write_layout
from tiny_archives import build_config
from tritonclient.grpc import model_config_pb2 as mc

from triton_mme.archive_inspection.archive import ArchiveError, read_archive
from triton_mme.archive_inspection.config_bounds import ONNX_PARAMETER_VALUES, config_problem
from triton_mme.catalog import CatalogError, parse_catalog
from triton_mme.core import limits
from triton_mme.core.formats import Format

Change = Callable[[mc.ModelConfig], object]


def _archive(tmp_path: Path, config: mc.ModelConfig) -> Path:
    return write_layout(
        tmp_path / "a.tar.gz", config=text_format.MessageToString(config), model_dir="tiny-cnn-onnx"
    )


def _with_warmup(config: mc.ModelConfig, dims: list[int], batch_size: int = 1) -> None:
    warmup = config.model_warmup.add(name="w", batch_size=batch_size)
    warmup.inputs["input"].data_type = mc.TYPE_FP32
    warmup.inputs["input"].dims.extend(dims)
    warmup.inputs["input"].random_data = True


def _parameter(key: str, value: str) -> Change:
    return lambda config: config.parameters[key].__setattr__("string_value", value)


def test_the_builds_own_config_is_within_every_bound(tmp_path: Path) -> None:
    config = build_config(Format.ONNX)
    _with_warmup(config, [3, 64, 64])

    assert config_problem(config) is None
    assert read_archive(_archive(tmp_path, config)).config == config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c.instance_group[0].__setattr__("count", 100000),
            "instance_group[0].count 100,000 is not allowed; allowed 1..16",
        ),
        (
            lambda c: [c.instance_group.add(kind=mc.ModelInstanceGroup.KIND_GPU, count=9) for _ in range(2)],
            "instance_group counts add up to 19 instances; allowed at most 16",
        ),
        (
            lambda c: c.instance_group[0].__setattr__("kind", mc.ModelInstanceGroup.KIND_MODEL),
            "instance_group[0].kind 3 is not allowed; allowed KIND_AUTO, KIND_GPU, KIND_CPU",
        ),
        (
            lambda c: _with_warmup(c, [1024, 1024, 1024, 1024]),
            "model_warmup 'w' input 'input' dims [1024, 1024, 1024, 1024]: 1,099,511,627,776 elements per "
            "sample; allowed at most 134,217,728",
        ),
        (
            lambda c: _with_warmup(c, [3, 64, 64], batch_size=10**9),
            "model_warmup 'w' batch_size 1,000,000,000 is not allowed; allowed 1..4 (max_batch_size)",
        ),
        (
            lambda c: [_with_warmup(c, [4, 4096, 4096], batch_size=2) for _ in range(3)],
            "model_warmup data of 1,610,612,736 bytes; allowed at most 1,073,741,824",
        ),
        (
            lambda c: [_with_warmup(c, [3, 64, 64]) for _ in range(5)],
            "5 model_warmup entries; allowed at most 4",
        ),
        (
            lambda c: c.dynamic_batching.__setattr__("max_queue_delay_microseconds", 2**63),
            "dynamic_batching.max_queue_delay_microseconds 9,223,372,036,854,775,808 is not allowed; "
            "allowed 0..10,000,000",
        ),
        (
            lambda c: c.dynamic_batching.preferred_batch_size.append(1_000_000),
            "dynamic_batching.preferred_batch_size 1000000 is not allowed; allowed 1..4 (max_batch_size)",
        ),
        (
            lambda c: c.dynamic_batching.preferred_batch_size.extend([1] * 17),
            "dynamic_batching.preferred_batch_size has 17 entries; allowed at most 16",
        ),
        (
            lambda c: c.optimization.graph.__setattr__("level", 99),
            "optimization.graph.level 99 is not allowed; allowed -1..2",
        ),
        (
            lambda c: c.input[0].__setattr__("data_type", 999),
            "input 'input' data_type 999 is not allowed; allowed BOOL, FP16",
        ),
        (
            lambda c: c.input[0].__setattr__("name", "x" * 300),
            "input name 'xxxxxxxx",
        ),
        (
            lambda c: c.output[0].__setattr__("name", "out\x1b[2J"),
            "output name 'out\\x1b[2J' is not allowed; allowed 1..256 printable characters",
        ),
        (
            lambda c: c.input[0].dims.extend([1] * 6),
            "input 'input' dims [3, 64, 64, 1, 1, 1, 1, 1, 1]: 9 dimensions; allowed at most 7",
        ),
        (
            lambda c: [c.output.add(name=f"o{i}", data_type=mc.TYPE_FP32, dims=[1]) for i in range(64)],
            "65 outputs; allowed at most 64",
        ),
        (
            _parameter("intra_op_thread_count", "999999"),
            "parameters.intra_op_thread_count '999999' is not allowed; allowed 0..256",
        ),
        (
            _parameter("inter_op_thread_count", "1" * 401),
            "parameters.inter_op_thread_count '11111111",
        ),
        (_parameter("execution_mode", "7"), "parameters.execution_mode '7' is not allowed; allowed 0..1"),
        (_parameter("enable_mem_pattern", "-1"), "parameters.enable_mem_pattern '-1' is not allowed"),
        (_parameter("cudnn_conv_algo_search", "²"), "parameters.cudnn_conv_algo_search '²' is not allowed"),
    ],
)
def test_an_archive_past_a_bound_is_refused_in_one_line(tmp_path: Path, change: Change, message: str) -> None:
    config = build_config(Format.ONNX)
    change(config)

    with pytest.raises(ArchiveError) as refused:
        read_archive(_archive(tmp_path, config))

    text = str(refused.value)
    assert text.startswith("a.tar.gz: config.pbtxt: ")
    assert message in text
    assert "\n" not in text and "\x1b" not in text


def test_every_onnx_runtime_parameter_the_build_writes_has_a_range() -> None:
    written = build_config(Format.ONNX).parameters

    assert set(written) == set(ONNX_PARAMETER_VALUES)
    assert all(int(value.string_value) in ONNX_PARAMETER_VALUES[key] for key, value in written.items())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"instance_count": limits.MAX_INSTANCE_COUNT + 1}, "instance_count"),
        ({"onnxruntime": {"intra_op_thread_count": limits.MAX_THREAD_COUNT + 1}}, "intra_op_thread_count"),
        (
            {"dynamic_batching": {"max_queue_delay_microseconds": limits.MAX_QUEUE_DELAY_MICROSECONDS + 1}},
            "max_queue_delay_microseconds",
        ),
        (
            {"dynamic_batching": {"preferred_batch_sizes": [1] * (limits.MAX_PREFERRED_BATCH_SIZES + 1)}},
            "preferred_batch_sizes",
        ),
    ],
)
def test_the_catalog_refuses_what_an_archive_may_not_carry(entry: dict[str, object], message: str) -> None:
    raw = {"name": "m", "source": "torchvision:resnet18", "weights": "random", "formats": ["onnx"]}
    with pytest.raises(CatalogError, match=message):
        parse_catalog({"models": [raw | {"max_batch_size": 2, "input_shape": [3, 8, 8]} | entry]})
