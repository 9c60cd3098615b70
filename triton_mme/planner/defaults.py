"""The planner's defaults, importable without numpy (the command line reads them at start-up)."""

# The endpoint's autoscaling target (triton_mme_cdk Settings.gpu_utilization_target, percent), for a plan
# made outside
# a project checkout or with --no-stack; in a checkout the stack's own setting is read (planner.stack). A test
# keeps the two defaults equal.
DEFAULT_GPU_UTILIZATION_TARGET = 60.0
DEFAULT_SIMULATED_REQUESTS = 50_000
DEFAULT_MAX_INSTANCES = 100
