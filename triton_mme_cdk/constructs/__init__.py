"""The building blocks: the whole multi-model endpoint, and its parts (model store, GPU runner and the two
build stages, trigger, hosting role, Triton image, endpoint, endpoint logs, autoscaling, monitoring,
observability, deployment policy and events, manifest promotion)."""
