"""The model build: the GPU runners of the build and the serving check, and the engine that runs both on
deployment."""
