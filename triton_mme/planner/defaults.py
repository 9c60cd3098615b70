"""The planner's defaults, importable without numpy (the command line reads them at start-up). The GPU
utilisation target is the stack's (triton_mme.sizing.targets)."""

DEFAULT_SIMULATED_REQUESTS = 50_000
DEFAULT_MAX_INSTANCES = 100
