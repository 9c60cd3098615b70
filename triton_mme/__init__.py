"""Build, publish, check and call the models of a SageMaker GPU multi-model endpoint served by Triton.

One package per job, all on the shared `core` (catalog, manifest, naming, Triton config, archives, golden
data, tolerances, serving report, platform facts; it imports neither torch nor boto3):

- `model_build`: export, verify and package the catalog's archives with PyTorch.
- `store`: publish archives and manifests to the model store (the only code that writes to S3).
- `client`: call the endpoint by TargetModel (numpy, Pillow, tritonclient, boto3; never PyTorch).
- `serving_check`: load every archive of a build in a real Triton (the SageMaker image on a GPU, or the
  local CPU Triton), replay its golden data, time it; never PyTorch.
- `local_triton`: serve archives in a local CPU Triton that loads them as SageMaker does.

`triton-mme` (or `python -m triton_mme`) runs every job as a sub-command; see `triton_mme.cli`.
"""
