"""Compile time of a Qwen3-Next-like model graph through the PTX pipeline.

    /usr/bin/python3 bench/compile_time.py [--layers 12,24,48] [--repeat 3]

Builds a stack of `layers` layers (every 4th the gated-attention block of
examples/qwen3_next, the others a SwiGLU MLP standing in for the linear-
attention layers; bf16, B = 1, S = 64, weights as arguments), inlines it into
one function as a frontend would export it, and times
`gated-attention-opt --inline --gated-attention-to-ptx` (wall time, best of
`repeat`, PTX for sm_90 with libdevice linked). Prints a table and writes
bench/results/compile-time-<date>.csv.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from gated_attention.models import qwen3_next  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", default="12,24,48")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--opt", default=os.path.join(ROOT, "build", "bin",
                                                 "gated-attention-opt"))
    p.add_argument("--out", default=os.path.normpath(
        os.path.join(ROOT, "bench", "results")))
    args = p.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (int(n) for n in args.layers.split(",")):
            src = os.path.join(tmp, f"model{layers}.mlir")
            with open(src, "w") as f:
                f.write(qwen3_next.model(layers))
            best, out = float("inf"), ""
            for _ in range(args.repeat):
                start = time.perf_counter()
                out = subprocess.run(
                    [args.opt, src, "--inline", "--gated-attention-to-ptx"],
                    check=True, capture_output=True, text=True, env=env).stdout
                best = min(best, time.perf_counter() - start)
            launches = len(re.findall(r"gpu\.launch_func", out))
            kernels = len(re.findall(r"gpu\.binary @", out))
            rows.append((layers, best, launches, kernels))
            print(f"{layers:3d} layers: {best:6.2f} s  ({launches} launches, "
                  f"{kernels} distinct kernels)", flush=True)
    os.makedirs(args.out, exist_ok=True)
    date = datetime.date.today().isoformat()
    path = os.path.join(args.out, f"compile-time-{date}.csv")
    with open(path, "w") as f:
        f.write("date,layers,seconds,launches,kernels\n")
        for layers, sec, launches, kernels in rows:
            f.write(f"{date},{layers},{sec:.3f},{launches},{kernels}\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
