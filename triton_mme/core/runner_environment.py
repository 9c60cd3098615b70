"""The variables the build and serving-check runners set for the commands they run: the CDK side's build
specs and build trigger set them (triton_mme_cdk/constructs), the commands read them."""

from __future__ import annotations

# The serving image's tag: the TensorRT plans a build makes and the serving check's image must match it.
TRITON_TAG_ENV = "TRITON_IMAGE_TAG"
# The build's fingerprint, the sha256 of everything the build depends on: it names the build's manifest.
FINGERPRINT_ENV = "MODEL_BUILD_FINGERPRINT"
# The build engine's run that started the stage (its Step Functions execution's name): with the fingerprint,
# where each build shard records the candidate it staged for that run's serving check (store.stages).
RUN_ENV = "MODEL_BUILD_RUN"
