from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from triton_mme_cdk.constructs.monitoring.endpoint_metrics import LATENCY_METRICS, EndpointMetrics

Stats = cloudwatch.Stats
LATENCY_PERCENTILES = (50, 90, 99)
MICROSECONDS = cloudwatch.YAxisProps(label="µs", show_units=False, min=0)
PERCENT = cloudwatch.YAxisProps(label="%", show_units=False, min=0)
COUNT = cloudwatch.YAxisProps(show_units=False, min=0)


class EndpointDashboard(Construct):
    """A CloudWatch dashboard: traffic and errors, latency, multi-model loading, instance resources, alarms.

    `alarms` are keyed by the metric name they watch; their thresholds are drawn on that metric's graph.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        metrics: EndpointMetrics,
        alarms: Mapping[str, cloudwatch.Alarm],
        min_instances: int | None = None,
        max_instances: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._alarms = alarms
        m = metrics
        capacity = [
            cloudwatch.HorizontalAnnotation(value=count, label=label)
            for count, label in ((min_instances, "min instances"), (max_instances, "max instances"))
            if count is not None
        ]
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(
            self._graph("Invocations", [m.invocations()], right=[m.invocations_per_instance()], width=8),
            self._graph("Errors", [m.errors("4XX"), m.errors("5XX")], width=8),
            self._graph(
                "Instances", [m.instances_serving(), m.instances_reporting()], width=8, extra=capacity
            ),
        )
        self.dashboard.add_widgets(
            *(
                self._graph(
                    f"{name} (µs)",
                    [m.latency(name, p) for p in LATENCY_PERCENTILES],
                    axis=MICROSECONDS,
                    width=12,
                )
                for name in LATENCY_METRICS
            )
        )
        self.dashboard.add_widgets(
            self._graph("Models loaded", [m.loaded_models(Stats.AVERAGE), m.loaded_models(Stats.SUM)]),
            self._graph(
                "Model cache hit ratio", [m.cache_hit_ratio()], axis=cloudwatch.YAxisProps(min=0, max=1)
            ),
            self._graph(
                "Model loading wait (µs)",
                [
                    m.model_loading_time("ModelLoadingWaitTime", stat)
                    for stat in (Stats.AVERAGE, Stats.MAXIMUM)
                ],
                axis=MICROSECONDS,
            ),
            self._graph(
                "Model download, load, unload (µs)",
                [
                    m.model_loading_time(name)
                    for name in ("ModelDownloadingTime", "ModelLoadingTime", "ModelUnloadingTime")
                ],
                axis=MICROSECONDS,
            ),
        )
        self.dashboard.add_widgets(
            self._graph(
                "GPU (%)",
                [
                    m.utilization("GPUUtilization"),
                    m.utilization("GPUMemoryUtilization"),
                    m.utilization("GPUMemoryUtilization", Stats.MAXIMUM),
                ],
                axis=PERCENT,
                width=8,
            ),
            self._graph(
                "CPU and memory (%)",
                [m.utilization("CPUUtilization"), m.utilization("MemoryUtilization")],
                axis=PERCENT,
                width=8,
            ),
            self._graph(
                "Disk (%)",
                [m.utilization("DiskUtilization"), m.utilization("DiskUtilization", Stats.MAXIMUM)],
                axis=PERCENT,
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms.values()), width=24)
        )

    def add_section(self, title: str, widgets: list[cloudwatch.IWidget]) -> None:
        """A titled row of widgets below the others (e.g. the per-model figures)."""
        self.dashboard.add_widgets(cloudwatch.TextWidget(markdown=f"## {title}", width=24, height=1))
        self.dashboard.add_widgets(*widgets)

    def _graph(
        self,
        title: str,
        left: list[cloudwatch.IMetric],
        *,
        right: list[cloudwatch.IMetric] | None = None,
        axis: cloudwatch.YAxisProps = COUNT,
        width: int = 6,
        extra: list[cloudwatch.HorizontalAnnotation] | None = None,
    ) -> cloudwatch.GraphWidget:
        watched = {metric.metric_name for metric in left if isinstance(metric, cloudwatch.Metric)}
        thresholds = [alarm.to_annotation() for name, alarm in self._alarms.items() if name in watched]
        return cloudwatch.GraphWidget(
            title=title,
            left=left,
            right=right or [],
            left_y_axis=axis,
            left_annotations=thresholds + (extra or []),
            width=width,
            height=6,
        )
