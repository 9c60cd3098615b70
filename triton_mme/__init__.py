"""Build, publish, check and call the models of a SageMaker GPU multi-model endpoint served by Triton.

One package per job, all on the shared `core` (catalog, manifest, naming, Triton config, archives,
platform facts; it imports neither torch nor boto3):

- `model_build`: export, verify and package the catalog's archives with PyTorch.
- `store`: publish archives and manifests to the model store (the only code that writes to S3).
- `client`: call the endpoint by TargetModel (numpy, Pillow, tritonclient, boto3; never PyTorch).
- `profiler`: measure built archives on a GPU (loads them with PyTorch, ONNX Runtime, TensorRT).
- `local_triton`: serve archives in a local CPU Triton that loads them as SageMaker does.

`triton-mme` (or `python -m triton_mme`) runs every job as a sub-command; see `triton_mme.cli`.
"""
