"""The f32 FMA peak of this machine, measured: bench/fma_peak.c (12
independent vfmadd chains per thread, each thread pinned to its own CPU)
built with the system's C compiler and run for each thread count and
vector width (256-bit on AVX2 + FMA, 512-bit on AVX-512), best of --repeat
runs of about --seconds each. Prints a table and writes
bench/results/fma-peak-<date>.csv.

    .venv/bin/python bench/fma_peak.py [--threads 2] [--repeat 5]

The peak is what the FMA pipes deliver, not a clock times a nominal width:
Zen 4 runs a 512-bit FMA as two halves on its two 256-bit pipes, so 512-bit
and 256-bit give the same GFLOP/s there, half the figure a core with two
512-bit FMA units would. bench/cpu_attention.py measures it in the same
run, before its attention rows, and reports each f32 row as a fraction of
it.
"""

import argparse
import datetime
import functools
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fma_peak.c")


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def widths():
    """The FMA vector widths this CPU runs (bits)."""
    flags = cpu_flags()
    return [w for w, need in ((256, {"avx2", "fma"}), (512, {"avx512f"}))
            if need <= flags]


@functools.lru_cache(maxsize=None)
def _build_dir():
    # Removed when the process exits (TemporaryDirectory's finalizer); a
    # plain mkdtemp left one directory in /tmp per benchmark run.
    return tempfile.TemporaryDirectory(prefix="ga-fma-peak-")


@functools.lru_cache(maxsize=None)
def binary():
    """fma_peak.c compiled once per process, into a temporary directory
    that is removed when the process exits."""
    cc = next((c for c in (os.environ.get("CC"), "clang", "cc", "gcc")
               if c and shutil.which(c)), None)
    if cc is None:
        raise RuntimeError("fma_peak: no C compiler (clang, cc or gcc)")
    path = os.path.join(_build_dir().name, "fma_peak")
    subprocess.run([cc, "-O2", "-pthread", "-o", path, SOURCE], check=True)
    return path


def run_once(threads, width, iterations):
    """(seconds, GFLOP/s) of one run."""
    out = subprocess.run([binary(), str(threads), str(width), str(iterations)],
                         capture_output=True, text=True, check=True)
    seconds, flop, _ = (float(x) for x in out.stdout.split())
    return seconds, flop / seconds / 1e9


def measure(threads, width, repeat=5, seconds=0.3):
    """Best GFLOP/s of `repeat` runs of about `seconds` each."""
    iterations = 1 << 20
    t, _ = run_once(threads, width, iterations)
    iterations = max(1, int(iterations * seconds / max(t, 1e-6)))
    return max(run_once(threads, width, iterations)[1] for _ in range(repeat))


def peak(threads, repeat=5, seconds=0.3):
    """{width: GFLOP/s} on `threads` threads for every width the CPU has."""
    return {w: measure(threads, w, repeat, seconds) for w in widths()}


def best(peaks):
    """The peak an f32 kernel can reach: the best width's."""
    return max(peaks.values()) if peaks else None


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int,
                   default=len(os.sched_getaffinity(0)),
                   help="measure 1..N threads (default: every CPU this "
                   "process may use)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seconds", type=float, default=0.3,
                   help="length of one run")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    if not widths():
        sys.exit("fma_peak: this CPU has no AVX2 FMA")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    load = os.getloadavg()[0]
    print(f"# f32 FMA peak, {stamp}, load average {load:.2f} before")
    print("| threads | width | GFLOP/s | per thread |")
    print("|---|---|---|---|")
    rows = []
    for t in range(1, args.threads + 1):
        for w, g in peak(t, args.repeat, args.seconds).items():
            rows.append((t, w, g))
            print(f"| {t} | {w} | {g:.1f} | {g / t:.1f} |", flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"fma-peak-{stamp}.csv")
    with open(path, "w") as f:
        f.write(f"# {' '.join(sys.argv)}; load average {load:.2f} before\n")
        f.write("threads,width_bits,gflops\n")
        for t, w, g in rows:
            f.write(f"{t},{w},{g:.4g}\n")
    print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
