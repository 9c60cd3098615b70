"""A local, CPU-only Triton that loads the build's archives the way a SageMaker multi-model endpoint does.

The tritonserver binary comes from the nvidia-pytriton wheel (python backend only), so every archive is
served through a CPU stand-in (see `standin`) that keeps its config.pbtxt as built wherever Triton checks it.
"""

# Models kept loaded before the least recently used is unloaded (the platform's memory pressure).
DEFAULT_MODEL_BUDGET = 4
