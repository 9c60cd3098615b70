"""Measure built archives on a GPU: load time, latency, throughput and GPU memory."""
