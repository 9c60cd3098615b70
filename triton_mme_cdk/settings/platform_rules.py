"""Synth-time rules of the settings against the platform table: GPU generation, driver and region.

Each rule returns one line naming the cdk.json keys, their values and what is allowed, or None when the
combination works. The settings call them on construction; `resolve_inference_ami` turns `auto` into a name.
"""

from __future__ import annotations

from collections.abc import Iterable

from triton_mme.core.platform import (
    PLATFORM,
    GpuInstanceType,
    TritonImage,
    build_image,
    deployable_regions,
    gpu_instance,
    serving_amis,
    supports_compute_capability,
    triton_image,
)

AUTO = "auto"


def instance_patterns(names: Iterable[str]) -> str:
    """Instance type names with whole families shortened, e.g. 'ml.g5.*, ml.p3.2xlarge'."""
    chosen = set(names)
    families: dict[str, list[str]] = {}
    for instance in PLATFORM.gpu_instance_types.values():
        families.setdefault(instance.family, []).append(instance.name)
    parts = []
    for family, members in families.items():
        picked = [name for name in members if name in chosen]
        if picked and len(picked) == len(members) and len(members) > 1:
            parts.append(f"{family}.*")
        else:
            parts.extend(picked)
    return ", ".join(parts)


def compute_capability_problem(tag: str, instance_type: str) -> str | None:
    """The tag's image supports only GPUs from a compute capability on (Triton release notes)."""
    if supports_compute_capability(tag, instance_type):
        return None
    image, instance = triton_image(tag), gpu_instance(instance_type)
    newer = [name for name in PLATFORM.gpu_instance_types if supports_compute_capability(tag, name)]
    older_tags = [
        other for other in PLATFORM.triton_images if supports_compute_capability(other, instance_type)
    ]
    allowed = [f"an instanceType with {image.min_compute_capability:.1f}+ ({instance_patterns(newer)})"]
    if older_tags:
        allowed.append(
            f"a tritonImageTag that supports {instance.compute_capability:.1f} ({', '.join(older_tags)})"
        )
    return (
        f"tritonImageTag={tag} needs a GPU of compute capability {image.min_compute_capability:.1f} or "
        f"newer, but instanceType={instance_type} has a {instance.gpu} ({instance.compute_capability:.1f}); "
        f"allowed: {', or '.join(allowed)}"
    )


def inference_ami_problem(tag: str, instance_type: str, requested: str) -> str | None:
    """`auto` needs an AMI that serves the tag here; an explicit AMI must apply here and serve the tag."""
    image, instance = triton_image(tag), gpu_instance(instance_type)
    serving = [ami.name for ami in serving_amis(tag, instance_type)]
    if requested == AUTO:
        return None if serving else _nothing_serves(image, instance)
    if requested not in PLATFORM.inference_amis:
        return f"inferenceAmiVersion={requested} is not a SageMaker GPU inference AMI; allowed: " + ", ".join(
            [AUTO, *PLATFORM.inference_amis]
        )
    if requested not in instance.inference_amis:
        return (
            f"inferenceAmiVersion={requested} does not apply to instanceType={instance_type}; allowed: "
            + ", ".join([AUTO, *instance.inference_amis])
        )
    if requested in serving:
        return None
    if not serving:
        return _nothing_serves(image, instance)
    ami = PLATFORM.inference_amis[requested]
    return (
        f"inferenceAmiVersion={requested} has NVIDIA driver {ami.driver} (CUDA {ami.cuda}), which does not "
        f"run tritonImageTag={tag} natively ({_needs(image)}); allowed with instanceType={instance_type}: "
        + ", ".join([AUTO, *serving])
    )


def resolve_inference_ami(tag: str, instance_type: str, requested: str) -> str:
    """The AMI the endpoint runs: the requested one, or for `auto` the newest that serves the tag here."""
    if requested != AUTO:
        return requested
    serving = serving_amis(tag, instance_type)
    if not serving:
        raise ValueError(_nothing_serves(triton_image(tag), gpu_instance(instance_type)))
    return serving[0].name


def region_problem(
    region: str | None, tag: str, *, allow_unconfirmed_build_region: bool = False
) -> str | None:
    """A region needs the Triton image, a Deep Learning Containers registry and CodeBuild GPU runners; a
    region only the older CodeBuild text names for GPU runners needs allowUnconfirmedBuildRegion=true."""
    if region is None:
        return None
    missing = []
    if region not in triton_image(tag).regions:
        missing.append(f"no SageMaker Triton image {tag}")
    if region not in PLATFORM.dlc_regions:
        missing.append("no Deep Learning Containers registry for the build image")
    unconfirmed = region in PLATFORM.regions.codebuild_gpu_regions_unconfirmed.value
    if region not in PLATFORM.regions.codebuild_gpu_regions.value and not (
        unconfirmed and allow_unconfirmed_build_region
    ):
        missing.append("no confirmed CodeBuild GPU runners" if unconfirmed else "no CodeBuild GPU runners")
    if not missing:
        return None
    allowed = ", ".join(deployable_regions(tag, unconfirmed_build_regions=allow_unconfirmed_build_region))
    opt_in = (
        ", or allowUnconfirmedBuildRegion=true (docs/settings-platform.md)"
        if unconfirmed and len(missing) == 1 and not allow_unconfirmed_build_region
        else ""
    )
    problems = " and ".join(missing)
    return f"region={region} has {problems}; allowed with tritonImageTag={tag}: {allowed}{opt_in}"


def build_gpu_problem(builder_compute_type: str, tag: str) -> str | None:
    """The runner's GPU must be one the build image's PyTorch supports, and the serving check's Triton."""
    gpu, image = PLATFORM.codebuild_gpus[builder_compute_type], build_image(tag)
    needed = max(image.min_compute_capability, triton_image(tag).min_compute_capability)
    if gpu.compute_capability >= needed:
        return None
    fitting = [name for name, other in PLATFORM.codebuild_gpus.items() if other.compute_capability >= needed]
    return (
        f"builderComputeType={builder_compute_type} builds on {gpu.gpu} (compute capability "
        f"{gpu.compute_capability:.1f}), which the build image {image.repository}:{image.tag} (PyTorch "
        f"{image.pytorch}, CUDA {image.cuda}) for tritonImageTag={tag} does not support ({needed:.1f}+); "
        f"allowed: builderComputeType={' or '.join(fitting) or 'none'}"
    )


def _needs(image: TritonImage) -> str:
    if image.min_driver is None:
        return f"CUDA {image.cuda}, whose driver is not known to ship in any SageMaker inference AMI"
    return f"CUDA {image.cuda} needs driver {image.min_driver}+"


def _nothing_serves(image: TritonImage, instance: GpuInstanceType) -> str:
    offered = (
        ", ".join(
            f"{name} (driver {PLATFORM.inference_amis[name].driver})" for name in instance.inference_amis
        )
        or f"only its default driver {instance.default_driver}"
    )
    working = [
        tag
        for tag in PLATFORM.triton_images
        if supports_compute_capability(tag, instance.name) and serving_amis(tag, instance.name)
    ]
    allowed = (
        f"a tritonImageTag one of them runs ({', '.join(working)})" if working else "another instanceType"
    )
    return (
        f"no SageMaker inference AMI runs tritonImageTag={image.tag} natively ({_needs(image)}) on "
        f"instanceType={instance.name}, which offers {offered}; allowed: {allowed}"
    )
