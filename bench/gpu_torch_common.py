"""What the torch benchmarks on the GPU share (bench/gpu_torch_op.py,
bench/gpu_paged.py, bench/gpu_backward.py): their two phases (prepare here, run on the GPU machine,
which has torch but no MLIR), CUDA-event timing, and the CSV they write."""

import argparse
import datetime
import os
import re

import torch
import torch.nn.functional as F


def baseline(q, k, v, g, layout):
    """What serving and training stacks run: causal SDPA, then a separate
    sigmoid gate, in the caller's layout."""
    if layout == "bshd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                       enable_gqa=True)
    if layout == "bshd":
        y = y.transpose(1, 2)
    return y * torch.sigmoid(g)


def timed(fn, reps=20):
    """The best of 3 runs of `reps` calls of `fn`, in ms per call (after
    one untimed call)."""
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / reps)
    return best


def write_csv(out_dir, prefix, rows):
    """Writes `rows` (lines) to <out_dir>/<prefix>-<date>-<gpu>.csv."""
    gpu = torch.cuda.get_device_name()
    os.makedirs(out_dir, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-").lower()
    path = os.path.join(out_dir, f"{prefix}-{datetime.date.today()}-"
                                 f"{stem}.csv")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {path} ({gpu}, torch {torch.__version__})")


def main(doc, prepare, run):
    """`prepare DIRECTORY` or `run [--out DIR]`: the exit status."""
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="phase", required=True)
    sub.add_parser("prepare").add_argument("directory")
    sub.add_parser("run").add_argument("--out", default="bench/results")
    args = p.parse_args()
    if args.phase == "prepare":
        prepare(args.directory)
        return 0
    return run(args.out)
