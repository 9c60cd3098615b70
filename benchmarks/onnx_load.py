"""Load an ONNX model archive the way an MME does: unpack, read config.pbtxt, create the session with
the config's ONNX Runtime settings, run the config's warm-up requests (Triton runs them during load),
then serve a first request.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from benchmarks.ort_options import session_options
from triton_mme.core.naming import MODEL_VERSION
from triton_mme.core.samples import NUMPY_DTYPES, sample_inputs
from triton_mme.core.triton_config import datatype_name, parse_config, tensor_specs


@dataclass(frozen=True)
class LoadedModel:
    config: pb.ModelConfig
    session: Any

    def feeds(self, batch_size: int, *, seed: int = 0) -> dict[str, np.ndarray]:
        return sample_inputs(tensor_specs(self.config.input), batch_size, seed=seed)

    def infer(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return list(self.session.run(None, feeds))

    def timed_call(self, batch_size: int) -> Callable[[], object]:
        """One inference on a fixed random batch, for the timing loops."""
        feeds = self.feeds(batch_size)
        return lambda: self.infer(feeds)


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack like SageMaker does (tar -xzf) and return the single model directory."""
    with tarfile.open(archive, mode="r:gz") as tar:
        tar.extractall(dest, filter="data")
    (model_dir,) = [child for child in dest.iterdir() if child.is_dir()]
    return model_dir


def model_file(model_dir: Path, config: pb.ModelConfig) -> Path:
    return model_dir / MODEL_VERSION / (config.default_model_filename or "model.onnx")


def read_config(model_dir: Path) -> pb.ModelConfig:
    return parse_config((model_dir / "config.pbtxt").read_text(encoding="utf-8"))


def create_session(path: Path, options: Any, *, cuda_options: dict[str, str] | None = None) -> Any:
    """A CPU session, or a CUDA one (with these provider options) when cuda_options is given."""
    import onnxruntime as ort

    providers: list[Any] = ["CPUExecutionProvider"]
    if cuda_options is not None:
        providers.insert(0, ("CUDAExecutionProvider", cuda_options))
    return ort.InferenceSession(str(path), sess_options=options, providers=providers)


def load_model_dir(model_dir: Path) -> LoadedModel:
    """A session with the settings of the directory's own config.pbtxt (no warm-up)."""
    config = read_config(model_dir)
    return LoadedModel(config, create_session(model_file(model_dir, config), session_options(config)))


def warmup_requests(config: pb.ModelConfig) -> list[dict[str, np.ndarray]]:
    """The `model_warmup` samples of a config as feeds (random or zero data, as Triton fills them)."""
    rng = np.random.default_rng(0)
    requests = []
    for warmup in config.model_warmup:
        feeds = {}
        for name, data in warmup.inputs.items():
            dtype = NUMPY_DTYPES[datatype_name(data.data_type)]
            shape = (max(warmup.batch_size, 1), *data.dims) if config.max_batch_size else tuple(data.dims)
            if data.random_data and np.issubdtype(dtype, np.floating):
                feeds[name] = rng.standard_normal(shape).astype(dtype)
            else:
                feeds[name] = np.zeros(shape, dtype=dtype)
        for _ in range(max(warmup.count, 1)):
            requests.append(feeds)
    return requests
