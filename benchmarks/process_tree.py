"""Peak resident memory of a whole process tree, sampled: what a runner's memory limit sees.

getrusage and `/usr/bin/time -v` report the largest single process, not the sum of a parent and its
children alive at once; this sums the resident set of the process and all its descendants every
SAMPLE_SECONDS (psutil) and keeps the largest sum. Pages shared between processes count once per
process, so the figure errs on the high side. CPU time is summed the same way: each process's user and
system time as last sampled (up to SAMPLE_SECONDS of each process's end is missed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

import psutil

SAMPLE_SECONDS = 0.05


def tree_resident_bytes(root: psutil.Process, cpu: dict[tuple[int, float], float] | None = None) -> int:
    """The resident bytes of `root` and its descendants; each one's user + system seconds into `cpu`."""
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for process in processes:
        try:
            total += process.memory_info().rss
            if cpu is not None:
                times = process.cpu_times()
                cpu[(process.pid, process.create_time())] = times.user + times.system
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
    # The run was stopped at its time limit (its whole process group killed); returncode is then negative.
    stopped: bool = False
    cpu_seconds: float = 0.0  # user + system time of every process of the tree, sampled


def run_measured(command: list[str], *, limit_s: float | None = None, **popen: object) -> TreeRun:
    """Run `command` to completion, sampling its process tree's resident memory; past `limit_s` seconds the
    command and every process it started are killed and the run is returned with `stopped` set."""
    started = time.perf_counter()
    if limit_s is not None:
        popen["start_new_session"] = True  # its own process group, so the whole tree can be stopped
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)  # type: ignore[call-overload]
    peak = 0
    cpu: dict[tuple[int, float], float] = {}  # by process (pid and start time): its CPU seconds
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(child.pid)
        while not done.is_set():
            peak = max(peak, tree_resident_bytes(root, cpu))
            time.sleep(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stopped = False
    try:
        stdout, stderr = child.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        stopped = True
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return TreeRun(child.returncode, seconds, peak, stdout, stderr, stopped, sum(cpu.values()))
