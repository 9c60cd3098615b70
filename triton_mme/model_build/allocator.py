"""Make the C allocator give freed memory back at once, so that each build step's peak adds to what the
model really holds, not to the heap that earlier steps left behind.

glibc serves a large allocation from the heap instead of mmap once an mmapped block of that size was freed
(its mmap threshold grows up to 32 MiB), and a freed block inside the heap stays resident. The ONNX export
of a large model allocates and frees blocks of one weight each: measured on RoBERTa-large (random weights,
2-core workstation), the process held 2.8-3.4 GiB after its `torch.onnx` export with glibc's defaults and
2.11 GiB with the thresholds below (2.06 GiB before the export); the export's own peak is the same either
way. What is no longer held is
room for the steps after it (fusion, verification). Other C libraries are left as they are.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

# mallopt(3) parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# Blocks of 1 MiB and more are mapped on their own and unmapped when freed; free memory above 1 MiB at the
# heap's top is returned. Setting both also stops glibc from raising them as it goes.
RETURN_THRESHOLD_BYTES = 1 << 20


def return_freed_memory_eagerly() -> bool:
    """Set glibc's mmap and trim thresholds for this process; False where the C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    options = (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD)
    applied = [libc.mallopt(option, RETURN_THRESHOLD_BYTES) for option in options]
    return all(result == 1 for result in applied)
