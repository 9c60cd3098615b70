from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from triton_mme.core.platform import PLATFORM

# Namespaces and dimensions: core.platform (LoadedModelCount has one datapoint per instance).
PERIOD = Duration.minutes(1)

LATENCY_METRICS = ("ModelLatency", "OverheadLatency")
MODEL_LOADING_TIMES = (
    "ModelLoadingWaitTime",
    "ModelDownloadingTime",
    "ModelLoadingTime",
    "ModelUnloadingTime",
)
UTILIZATION_METRICS = (
    "GPUUtilization",
    "GPUMemoryUtilization",
    "CPUUtilization",
    "MemoryUtilization",
    "DiskUtilization",
)


class EndpointMetrics:
    """One production variant's CloudWatch metrics, each with a statistic that is meaningful for it.

    Latencies and model-loading times are in microseconds; utilizations in percent (0-100 on the
    single-GPU instances a GPU multi-model endpoint runs on).
    """

    def __init__(self, *, endpoint_name: str, variant_name: str) -> None:
        self.dimensions = dict(
            zip(PLATFORM.limits.metrics.variant_dimensions, (endpoint_name, variant_name), strict=True)
        )

    def invocations(self) -> cloudwatch.Metric:
        return self._request("Invocations", cloudwatch.Stats.SUM)

    def invocations_per_instance(self) -> cloudwatch.Metric:
        return self._request("InvocationsPerInstance", cloudwatch.Stats.SUM)

    def errors(self, status_class: str) -> cloudwatch.Metric:
        """Invocation4XXErrors or Invocation5XXErrors: 1 per failed request, so Sum counts them."""
        return self._request(
            f"Invocation{status_class}Errors", cloudwatch.Stats.SUM, f"{status_class} errors"
        )

    def latency(self, name: str, percentile: int) -> cloudwatch.Metric:
        return self._request(name, cloudwatch.Stats.percentile(percentile), f"{name} p{percentile}")

    def model_loading_time(self, name: str, statistic: str = cloudwatch.Stats.AVERAGE) -> cloudwatch.Metric:
        return self._request(name, statistic)

    def cache_hit_ratio(self) -> cloudwatch.Metric:
        # ModelCacheHit is 1 for a request whose model was loaded, else 0: its Average is the hit ratio.
        return self._request("ModelCacheHit", cloudwatch.Stats.AVERAGE, "Cache hit ratio")

    def loaded_models(self, statistic: str) -> cloudwatch.Metric:
        """LoadedModelCount: Average is models per instance, Sum the copies loaded across the variant."""
        return self._instance("LoadedModelCount", statistic)

    def utilization(self, name: str, statistic: str = cloudwatch.Stats.AVERAGE) -> cloudwatch.Metric:
        return self._instance(name, statistic)

    def instances_serving(self) -> cloudwatch.MathExpression:
        """The instance count requests saw: each request adds 1/instances to InvocationsPerInstance.

        Defined only in minutes with traffic; `instances_reporting` covers idle minutes.
        """
        return cloudwatch.MathExpression(
            expression="invocations / perInstance",
            using_metrics={"invocations": self.invocations(), "perInstance": self.invocations_per_instance()},
            label="Instances serving (Invocations / InvocationsPerInstance)",
            period=PERIOD,
        )

    def instances_reporting(self) -> cloudwatch.Metric:
        # Every in-service instance publishes one CPUUtilization datapoint per minute.
        return self._instance(
            "CPUUtilization", cloudwatch.Stats.SAMPLE_COUNT, "Instances reporting (CPUUtilization samples)"
        )

    def _request(self, name: str, statistic: str, label: str | None = None) -> cloudwatch.Metric:
        return self._metric(PLATFORM.limits.metrics.invocation_namespace, name, statistic, label)

    def _instance(self, name: str, statistic: str, label: str | None = None) -> cloudwatch.Metric:
        return self._metric(PLATFORM.limits.metrics.instance_namespace, name, statistic, label)

    def _metric(self, namespace: str, name: str, statistic: str, label: str | None) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=namespace,
            metric_name=name,
            dimensions_map=self.dimensions,
            statistic=statistic,
            period=PERIOD,
            label=label or f"{name} {statistic}",
        )
