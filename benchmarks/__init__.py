"""The benchmark suite: the project's output against the plain notebook approach, measured side by side.

Run with `make bench` or `python -m benchmarks [--quick] [--only NAME ...]`; results land in
benchmarks/results/<date>-<machine>.{json,md,png}.
"""
