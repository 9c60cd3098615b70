"""What is known of a catalog and its archives before they are built or served, without PyTorch, a GPU or the
network: whether each source resolves (offline_sources, a checkpoint's pinned content in checkpoint_sources),
each model's parameters and the build's memory and time (build_memory, build_time), and a loaded archive's
footprint (estimate, from assumptions.yaml).

One leaf that both sides use: synthesis (triton_mme_cdk) checks a catalog and sizes its build and its
dedicated models with it, the build (model_build) resolves the same sources, the planner (planner) estimates
the same footprints. It imports only the core."""
