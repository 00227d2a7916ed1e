# RUN: %PYTHON %s %gated_attention_src_root
# bench/timing.py, the one way every CPU benchmark times a call (ours and
# the peers' in their child processes): warm-up calls are not counted, at
# least `repeat` calls and MEASURE_SECONDS of calls are, the best one is the
# figure, and the children's import line gives them the same function.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import timing  # noqa: E402


class Clock:
    """A fake perf_counter that each call of `fn` advances by its cost."""

    def __init__(self, costs):
        self.now, self.costs, self.calls = 0.0, costs, 0

    def __call__(self):
        return self.now

    def fn(self):
        self.now += self.costs(self.calls)
        self.calls += 1


def timed(costs, repeat, **kw):
    clock = Clock(costs)
    real, timing.time.perf_counter = timing.time.perf_counter, clock
    try:
        return timing.best_seconds(clock.fn, repeat, **kw), clock.calls
    finally:
        timing.time.perf_counter = real


def close(a, b):
    return abs(a - b) < 1e-9


# Fast first calls are warm-up: they never become the figure.
best, calls = timed(lambda i: 0.001 if i < 2 else 0.1, 3)
assert close(best, 0.1), best
# Warm-up lasts WARMUP_SECONDS: 1 ms calls warm up for 300 of them, then
# MEASURE_SECONDS of them are timed, and the slow ones among them lose.
best, calls = timed(lambda i: 0.001 if i % 7 else 0.005, 3)
assert close(best, 0.001), best
warm = int(timing.WARMUP_SECONDS / 0.001)
assert calls >= warm + timing.MEASURE_SECONDS / 0.005, calls
# Long calls: `repeat` timed calls after `warmup_calls`, no more.
best, calls = timed(lambda i: 5.0 - i * 0.5, 3)
assert calls == 5 and close(best, 5.0 - 4 * 0.5), (best, calls)
best, calls = timed(lambda i: 5.0, 1, warmup_calls=1)
assert calls == 2, calls
for bad in ({"repeat": 0}, {"repeat": 1, "warmup_calls": 0}):
    try:
        timing.best_seconds(lambda: None, **bad)
    except ValueError as e:
        assert "at least 1" in str(e), e
    else:
        raise AssertionError(f"{bad} accepted")
# A child process (how the peers and numpy run) gets best_seconds through
# CHILD_IMPORT, from any working directory.
child = subprocess.run(
    [sys.executable, "-c", timing.CHILD_IMPORT +
     "import timing; timing.MEASURE_SECONDS = 0.01\n"
     "print(best_seconds(lambda: None, 2) >= 0)"],
    cwd="/", capture_output=True, text=True, check=True)
assert child.stdout.strip() == "True", child
print("ok")
