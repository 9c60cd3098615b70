from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from constructs import Construct

from triton_mme_cdk.constructs.monitoring.alarm_topic import AlarmTopic
from triton_mme_cdk.constructs.monitoring.endpoint_dashboard import EndpointDashboard
from triton_mme_cdk.constructs.monitoring.endpoint_metrics import EndpointMetrics
from triton_mme_cdk.settings import AlarmThresholds

MICROSECONDS_PER_MILLISECOND = 1000
# What a healthy fleet that starts with empty caches moves: the first call of each model on each new instance
# waits for its download and load (ModelLoadingWaitTime and the loading metrics), misses the cache
# (ModelCacheHit), meets ModelNotReadyException while the load runs (a 4XX), and its first inference is slow
# (ModelLatency: a cold ResNet-50 call took about 8 s, against about 170 ms warm). Every update starts a new
# fleet this way (a canary is one new instance), so a rollback alarm on any of them would roll healthy updates
# back: these alarms notify, and only the 5XX alarm guards updates.
COLD_START_METRICS = frozenset(
    {
        "ModelLoadingWaitTime",
        "ModelLoadingTime",
        "ModelDownloadingTime",
        "ModelCacheHit",
        "ModelLatency",
        "Invocation4XXErrors",
        "LoadedModelCount",
        "GPUMemoryUtilization",
    }
)
Comparison = cloudwatch.ComparisonOperator
Missing = cloudwatch.TreatMissingData


class EndpointMonitoring(Construct):
    """Alarms and a dashboard for one endpoint variant; every alarm notifies `self.alarm_topic`.

    The 5XX alarm also guards endpoint updates (`rollback_alarms`): a new fleet with cold caches answers
    no 5XX while it loads (ModelNotReadyException is a 4XX), whereas it moves every metric of
    COLD_START_METRICS. `endpoint_name` is the endpoint's fixed name, not a reference to the endpoint, so
    the alarms can exist before the endpoint that names them (TritonEndpoint.guard_updates).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint_name: str,
        variant_name: str,
        thresholds: AlarmThresholds,
        min_instances: int | None = None,
        max_instances: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.metrics = EndpointMetrics(endpoint_name=endpoint_name, variant_name=variant_name)
        self.alarm_topic = AlarmTopic(self, "AlarmTopic", email=thresholds.email)
        self.thresholds = thresholds
        self.rollback_alarms: list[cloudwatch.Alarm] = []
        m, t = self.metrics, thresholds
        # Request-driven metrics exist only while requests arrive, so an idle endpoint is healthy
        # (NOT_BREACHING). Instance metrics arrive every minute while instances run: a gap says nothing
        # about memory or disk, so those alarms keep their state (MISSING) instead of guessing.
        self.errors_5xx = self._alarm(
            "Errors5xx",
            m.errors("5XX"),
            threshold=t.errors_5xx_per_minute,
            missing=Missing.NOT_BREACHING,
            description="The endpoint answered with 5XX errors (507: a model did not fit in GPU memory).",
            guards_updates=True,
        )
        self.model_latency_high = self._alarm(
            "ModelLatencyP99High",
            m.latency("ModelLatency", 99),
            threshold=t.model_latency_p99_ms * MICROSECONDS_PER_MILLISECOND,
            missing=Missing.NOT_BREACHING,
            description=f"1% of requests took the model {t.model_latency_p99_ms} ms or more to answer.",
        )
        self.gpu_memory_high = self._alarm(
            "GpuMemoryHigh",
            m.utilization("GPUMemoryUtilization", cloudwatch.Stats.MAXIMUM),
            threshold=t.gpu_memory_percent,
            missing=Missing.MISSING,
            description="An instance's GPU memory is nearly full: Triton unloads models and new loads fail.",
        )
        self.disk_high = self._alarm(
            "DiskHigh",
            m.utilization("DiskUtilization", cloudwatch.Stats.MAXIMUM),
            threshold=t.disk_percent,
            missing=Missing.MISSING,
            description="An instance's disk is nearly full: archives get evicted and downloaded again.",
        )
        self.model_loading_wait_high = self._alarm(
            "ModelLoadingWaitHigh",
            m.model_loading_time("ModelLoadingWaitTime"),
            threshold=t.model_loading_wait_ms * MICROSECONDS_PER_MILLISECOND,
            missing=Missing.NOT_BREACHING,
            description=f"Requests waited {t.model_loading_wait_ms} ms or more on average for a model load.",
        )
        self.cache_hit_low = self._alarm(
            "CacheHitLow",
            m.cache_hit_ratio(),
            threshold=t.cache_hit_percent / 100,
            comparison=Comparison.LESS_THAN_THRESHOLD,
            missing=Missing.NOT_BREACHING,
            description="Many requests found their model unloaded: the models in use do not fit.",
        )
        # Keyed by the metric each alarm watches, so the dashboard draws thresholds on the right graphs.
        self.alarms: dict[str, cloudwatch.Alarm] = {
            "Invocation5XXErrors": self.errors_5xx,
            "ModelLatency": self.model_latency_high,
            "GPUMemoryUtilization": self.gpu_memory_high,
            "DiskUtilization": self.disk_high,
            "ModelLoadingWaitTime": self.model_loading_wait_high,
            "ModelCacheHit": self.cache_hit_low,
        }
        self.dashboard = EndpointDashboard(
            self,
            "Dashboard",
            metrics=self.metrics,
            alarms=self.alarms,
            min_instances=min_instances,
            max_instances=max_instances,
        )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.Metric,
        *,
        threshold: float,
        missing: cloudwatch.TreatMissingData,
        description: str,
        comparison: cloudwatch.ComparisonOperator = Comparison.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        guards_updates: bool = False,
    ) -> cloudwatch.Alarm:
        alarm = metric.create_alarm(
            self,
            construct_id,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=self.thresholds.evaluation_minutes,
            datapoints_to_alarm=self.thresholds.datapoints_to_alarm,
            treat_missing_data=missing,
            alarm_description=description,
            # A percentile over a few requests says little (one cold load is the p99 of a quiet minute): such
            # minutes leave the alarm as it is instead of rolling an update back.
            evaluate_low_sample_count_percentile="ignore" if metric.statistic.startswith("p") else None,
        )
        if guards_updates:
            if metric.metric_name in COLD_START_METRICS:
                raise ValueError(f"{construct_id}: a fleet with cold caches moves {metric.metric_name}")
            self.rollback_alarms.append(alarm)
        notify = actions.SnsAction(self.alarm_topic.topic)
        alarm.add_alarm_action(notify)
        alarm.add_ok_action(notify)
        return alarm
