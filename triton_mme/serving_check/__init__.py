"""Every archive of a build, loaded and called in the endpoint's own Triton before any manifest names it.

For each archive: unpack it as SageMaker does, load it under its TargetModel name through the SageMaker
multi-model routes, replay its golden inputs and compare the answers with PyTorch's, time the load and the
requests, then unload it (`check`). Two targets serve it (`targets`): the real `sagemaker-tritonserver`
image started as SageMaker starts it for a multi-model endpoint (the GPU stage of the deployment), and the
project's local CPU Triton (offline, `triton-mme serving-check --server local`). The result is a
core.serving_report.ServingReport.
"""
