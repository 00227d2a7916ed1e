"""CPU benchmark of the dense op's decode step through the torch op's
Python API: gated_attention.torch.attention (compiled once for any Sq, as
the torch op always is; a one-query tile computes one row per head; after
its first call the op's kernel without the dispatcher, docs/Design.md)
against F.scaled_dot_product_attention(..., enable_gqa=True) * sigmoid(g),
in one process, the same threads.

    .venv/bin/python bench/cpu_decode.py [--batches 1,8]
        [--contexts 1024,4096] [--dtypes f32,bf16] [--threads N]
        [--splits 1,4]

Qwen3-Next's full-attention layer (Hq 16 over Hkv 2, D 256, causal), one
query per sequence over `context` cached keys ([B, H, S, D] tensors). The
table gives ms per step (bench/timing.py: best of --repeat and of a
second of calls, after warm-up) and the K/V bytes read per second.
"ours" is that call (the pipeline's kv-splits=auto: split-KV when the
B x Hkv tiles are fewer than the threads); each `--splits` count N adds
the same function compiled with kv-splits=N (1: no split) and called on
the same tensors. Writes bench/results/cpu-decode-<date>.csv.
"""

import argparse
import csv
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from timing import best_seconds  # noqa: E402

HQ, HKV, D = 16, 2, 256


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", default="1,8")
    p.add_argument("--contexts", default="1024,4096")
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--splits", default="1",
                   help="kv-splits counts to time beside the default "
                        "(comma-separated; empty: none)")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    import torch.nn.functional as F
    import gated_attention.torch as gat
    from gated_attention.torch import _args, _cpu
    torch.set_num_threads(args.threads)
    kinds = {"f32": torch.float32, "bf16": torch.bfloat16}
    splits = [int(n) for n in args.splits.split(",") if n]
    rows = []
    fixed = "".join(f" kv-splits={n} ms |" for n in splits)
    print(f"| B | context | dtype | ours ms | torch ms |{fixed} ours GB/s | "
          "ours / torch |")
    print("|---|---|---|---|---|" + "---|" * len(splits) + "---|---|")
    for dtype in args.dtypes.split(","):
        for b in map(int, args.batches.split(",")):
            for ctx in map(int, args.contexts.split(",")):
                gen = torch.Generator().manual_seed(0)
                q, g = (torch.randn(b, HQ, 1, D, generator=gen).to(kinds[dtype])
                        for _ in range(2))
                k, v = (torch.randn(b, HKV, ctx, D, generator=gen)
                        .to(kinds[dtype]) for _ in range(2))
                with torch.no_grad():
                    ours = best_seconds(
                        lambda: gat.attention(q, k, v, g, causal=True),
                        args.repeat)
                    theirs = best_seconds(
                        lambda: F.scaled_dot_product_attention(
                            q, k, v, is_causal=False, enable_gqa=True)
                        * torch.sigmoid(g), args.repeat)
                    forced = [time_split(_args, _cpu, q, k, v, g, n,
                                         args.repeat) for n in splits]
                gbs = 2 * b * ctx * HKV * D * k.element_size() / ours / 1e9
                rows.append([b, ctx, dtype, f"{ours * 1e3:.4g}",
                             f"{theirs * 1e3:.4g}"]
                            + [f"{t * 1e3:.4g}" for t in forced]
                            + [f"{gbs:.4g}", f"{theirs / ours:.4g}"])
                cells = "".join(f" {t * 1e3:.2f} |" for t in forced)
                print(f"| {b} | {ctx} | {dtype} | {ours * 1e3:.2f} | "
                      f"{theirs * 1e3:.2f} |{cells} {gbs:.1f} | "
                      f"{theirs / ours:.2f}x |", flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out,
                        f"cpu-decode-{datetime.date.today().isoformat()}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["B", "context", "dtype", "ours_ms", "torch_ms"]
                   + [f"kv_splits_{n}_ms" for n in splits]
                   + ["ours_gbs", "ours_over_torch"])
        w.writerows(rows)
    print(f"wrote {path} ({args.threads} threads)")


def time_split(_args, _cpu, q, k, v, g, n, repeat):
    """Seconds per call of the torch op's function for q, k, v, g compiled
    with kv-splits=n, into a new output."""
    cfg = _args.compile_key(_args.check(q, k, v, g, True, None, "sigmoid",
                                        "mul", "bhsd"))
    kernel = _cpu.CpuKernel(cfg, pipeline=(
        f"--gated-attention-to-llvm=kv-splits={n}",))
    out = _args.new_output(q, v, "bhsd")
    return best_seconds(lambda: kernel(q, k, v, g, out), repeat)


if __name__ == "__main__":
    main()
