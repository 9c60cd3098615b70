"""The pins the GPU runners install (requirements-build.txt for the model build, requirements-check.txt and
requirements-uv.txt for the serving check): package data, so a construct used from another project finds
them (triton_mme_cdk.runner_files)."""
