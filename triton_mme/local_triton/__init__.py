"""A local, CPU-only Triton that loads the build's archives the way a SageMaker multi-model endpoint does.

The tritonserver binary comes from the nvidia-pytriton wheel (python backend only), so every archive is
served through a CPU stand-in (see `standin`) that keeps its config.pbtxt as built wherever Triton checks it.
"""

import os

# Models kept loaded before the least recently used is unloaded (the platform's memory pressure).
DEFAULT_MODEL_BUDGET = 4
# Model instances of all loaded models together: each is a python backend stub process on this machine's CPUs.
# An archive may ask for 16 per model (archive_inspection.config_bounds); past this budget the least recently
# used models are unloaded, and a model that alone asks for more is loaded with fewer (the stand-in says so).
DEFAULT_INSTANCE_BUDGET = max(4, 2 * (os.cpu_count() or 1))
