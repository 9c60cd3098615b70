"""The app's building blocks: model store, build runner and trigger, hosting role, Triton image, endpoint,
endpoint logs, autoscaling, monitoring."""
