"""The monitoring: alarms and their topic, the endpoint's metrics and dashboard, the per-model
observability."""
