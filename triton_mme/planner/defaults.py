"""The planner's defaults, importable without numpy (the command line reads them at start-up)."""

# The endpoint's autoscaling target (infra Settings.gpu_utilization_target, percent): the planner takes it as
# an argument with the same default, so it never imports the CDK app (a test keeps the two equal).
DEFAULT_GPU_UTILIZATION_TARGET = 60.0
DEFAULT_SIMULATED_REQUESTS = 50_000
DEFAULT_MAX_INSTANCES = 100
