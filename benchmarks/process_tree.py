"""Peak resident memory of a whole process tree, sampled: what a runner's memory limit sees.

getrusage and `/usr/bin/time -v` report the largest single process, not the sum of a parent and its
children alive at once; this sums the resident set of the process and all its descendants every
SAMPLE_SECONDS (psutil) and keeps the largest sum. Pages shared between processes count once per
process, so the figure errs on the high side.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass

import psutil

SAMPLE_SECONDS = 0.05


def tree_resident_bytes(root: psutil.Process) -> int:
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


@dataclass(frozen=True)
class TreeRun:
    returncode: int
    seconds: float
    peak_bytes: int
    stdout: str
    stderr: str


def run_measured(command: list[str], **popen: object) -> TreeRun:
    """Run `command` to completion, sampling its process tree's resident memory."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)  # type: ignore[call-overload]
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(child.pid)
        while not done.is_set():
            peak = max(peak, tree_resident_bytes(root))
            time.sleep(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = child.communicate()
    done.set()
    sampler.join()
    return TreeRun(child.returncode, time.perf_counter() - started, peak, stdout, stderr)
