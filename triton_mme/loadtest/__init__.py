"""The load test: the traffic file's requests, driven by Locust against a SageMaker endpoint or the local
Triton, measured in the shape of the planner's prediction (`triton-mme loadtest`, docs/capacity-planning.md).

Locust patches the standard library for gevent when it is imported, so only `runner` imports it, and only
inside the `loadtest` command's own process."""
