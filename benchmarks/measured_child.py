"""Run one command and report its wall time and peak memory: `python -m benchmarks.measured_child CMD...`.

Prints the command's output, then one JSON line {"seconds", "peak_rss_mb", "returncode"}. The peak is the
command's own maximum resident set (getrusage of the only child this process has).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> int:
    started = time.perf_counter()
    completed = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux reports KiB
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    report = {"seconds": seconds, "peak_rss_mb": peak_kib * 1024 / 1e6, "returncode": completed.returncode}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
