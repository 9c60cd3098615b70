"""The app's building blocks: model store, hosting role, Triton image, endpoint, autoscaling."""
