"""How every CPU benchmark times a call, ours and the peers' alike (the
peers' child processes import this file too).

A call's figure is its best time over at least `repeat` calls and at least
MEASURE_SECONDS of calls, after at least `warmup_calls` calls and
WARMUP_SECONDS of warm-up. The first calls of a process pay for more than
the call: glibc's malloc raises its mmap and trim thresholds only after it
frees the first large blocks, so until then outputs and scratch are fresh
pages, faulted in and zeroed by the kernel. On a 2-core Zen 4 (2026-12-06)
our H 8 D 128 forward at S 512 ran 146-153 GFLOP/s over its first 15 calls
and 171-179 from its 11th on, with no page fault left; torch's SDPA
allocates its output and buffers through the same malloc. A server calls
the same op thousands of times: the steady state is what it runs.
"""

import os
import time

# Prepended to a child's `python -c` source: it then calls best_seconds.
CHILD_IMPORT = ("import sys; sys.path.insert(0, %r); "
                "from timing import best_seconds\n"
                % os.path.dirname(os.path.abspath(__file__)))

WARMUP_SECONDS = 0.3
MEASURE_SECONDS = 1.0


def best_seconds(fn, repeat, warmup_calls=2):
    """The best wall time of one call of `fn` in seconds, after warm-up."""
    if repeat < 1 or warmup_calls < 1:
        raise ValueError(f"repeat ({repeat}) and warmup_calls "
                         f"({warmup_calls}) must be at least 1")
    start, calls = time.perf_counter(), 0
    while calls < warmup_calls or time.perf_counter() - start < WARMUP_SECONDS:
        fn()
        calls += 1
    best, spent, calls = float("inf"), 0.0, 0
    while calls < repeat or spent < MEASURE_SECONDS:
        t = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - t
        best, spent, calls = min(best, elapsed), spent + elapsed, calls + 1
    return best
