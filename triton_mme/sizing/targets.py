"""The endpoint's autoscaling target: the GPU utilisation, in percent, that the stack's target tracking
holds by default (triton_mme_cdk ScalingSettings.gpu_utilization_target) and that a plan sizes the instances
for when it reads no stack (triton_mme.planner)."""

DEFAULT_GPU_UTILIZATION_TARGET = 60.0
