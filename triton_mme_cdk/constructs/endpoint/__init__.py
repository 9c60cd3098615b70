"""The multi-model endpoint: the Triton image, hosting role, model, config and endpoint, its logs,
autoscaling, update policy and deployment events."""
