"""CPU benchmark of paged decode: gated_attention.paged_attention against
what a CPU user runs today, in one run, threads pinned the same.

    .venv/bin/python bench/cpu_paged.py [--batches 1,8] [--contexts 1024,4096]
        [--page 16] [--dtypes f32,bf16] [--threads N] [--splits 1,2,4]
        [--matrix-units avx512-bf16]

One decode step of Qwen3-Next's full-attention layer (Hq 16 over Hkv 2,
D 256, a sigmoid gate): B sequences of `context` cached tokens each, one
query per sequence, pages shuffled in the cache. Ours: ga.paged_attention
(the tiled CPU lowering reads each key block from its pages in place,
tiles of all sequences on the OpenMP threads; the pipeline's kv-splits=auto
splits each tile's keys across threads when the tiles that hold queries
are fewer than the threads: `auto_splits` is the parts its rule takes,
paged.cpu_key_splits). `--splits` counts N add the op compiled with
kv-splits=N (1: no split) beside it. `torch op`: the same step through
gated_attention.torch.paged_attention, on torch tensors of the same memory
(what an engine calls; `ours / torch` is the numpy entry point's). torch:
the same gather with tensor indexing
(key_cache[block_table]), F.scaled_dot_product_attention(..., enable_gqa=
True) and `* torch.sigmoid(g)`, in a child process pinned like ours.
`--matrix-units U` compiles ours with matrix-units=U instead of the host's
choice (the bf16 products on AVX512-BF16, as an AMX host's decode steps
run them, on a host that would take FMAs); the torch op keeps the host's
and is not timed. The
table gives ms per step (bench/timing.py: best of --repeat and of a
second of calls, after warm-up) and the K/V bytes read per second
(2 * B * context * Hkv * D * element size / time).
Writes bench/results/cpu-paged-<date>.csv, with the threads and the load
average (1 minute) before each row.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from gated_attention import dtypes, kernel_cache, paged  # noqa: E402
from gated_attention.dtypes import numpy_dtype  # noqa: E402
from timing import CHILD_IMPORT, best_seconds  # noqa: E402

HQ, HKV, D = 16, 2, 256

TORCH = CHILD_IMPORT + r"""
import json, os, sys
import numpy as np, torch, torch.nn.functional as F
b, ctx, page, repeat, dtype = sys.argv[1:6]
b, ctx, page, repeat = int(b), int(ctx), int(page), int(repeat)
dtype = getattr(torch, dtype)
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
hq, hkv, d = 16, 2, 256
per_seq = -(-ctx // page)
rng = np.random.default_rng(0)
table = torch.tensor(rng.permutation(b * per_seq).reshape(b, per_seq))
kc = torch.randn(b * per_seq, page, hkv, d).to(dtype)
vc = torch.randn(b * per_seq, page, hkv, d).to(dtype)
q = torch.randn(b, hq, 1, d).to(dtype)
g = torch.randn(b, hq, 1, d).to(dtype)
def step():
    k = kc[table].reshape(b, per_seq * page, hkv, d)[:, :ctx].transpose(1, 2)
    v = vc[table].reshape(b, per_seq * page, hkv, d)[:, :ctx].transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    return y * torch.sigmoid(g)
with torch.no_grad():
    best = best_seconds(step, repeat)
print(json.dumps({"seconds": best}))
"""


def ours(b, ctx, page, repeat, dtype, splits=None, torch_op=False,
         units=None):
    per_seq = -(-ctx // page)
    rng = np.random.default_rng(0)
    table = rng.permutation(b * per_seq).reshape(b, per_seq).astype(np.int32)
    # The cache in the element type, as an engine holds it (bf16 as
    # ml_dtypes.bfloat16: passed to the kernel without a conversion).
    kind = np.float32 if dtype == "f32" else numpy_dtype(dtype)
    kc = rng.standard_normal((b * per_seq, page, HKV, D), np.float32).astype(kind)
    vc = rng.standard_normal((b * per_seq, page, HKV, D), np.float32).astype(kind)
    q = rng.standard_normal((b, HQ, D), np.float32)
    g = rng.standard_normal((b, HQ, D), np.float32)
    lens = np.full(b, ctx, np.int32)
    cu = np.arange(b + 1, dtype=np.int32)

    if units:
        # paged.paged_attention's CPU call, its library compiled with the
        # units.
        cfg = paged._config(q, kc, vc, g, causal=True, scale=None,
                            gate="sigmoid", combine="mul", dtype=dtype)
        pipeline = f"--gated-attention-to-llvm=matrix-units={units}" + (
            f" kv-splits={splits}" if splits else "")
        lib = kernel_cache.cpu_library(paged.paged_destination_ir(cfg, page),
                                       f"paged, matrix-units={units}",
                                       (pipeline,))
        args = [np.ascontiguousarray(dtypes.kernel_operand(x, dtype))
                for x in (q, kc, vc)] + [table, lens, cu,
                                         dtypes.kernel_operand(g, dtype)]
        out = np.empty((b, HQ, D), dtypes.storage_type(dtype))
        return best_seconds(lambda: lib.call_into("paged", args + [out]),
                            repeat)
    if not torch_op:
        return best_seconds(lambda: paged.paged_attention(
            q, kc, vc, table, lens, cu, g, causal=True, dtype=dtype,
            num_splits=splits), repeat)
    # The same step through the torch op, as an engine calls it: torch
    # tensors on the same memory (bf16 reinterpreted, not converted).
    import torch
    import gated_attention.torch as gat

    def tensor(x):
        if x.dtype.itemsize == 2 and x.dtype.kind == "V":
            return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(x)

    element = torch.float32 if dtype == "f32" else torch.bfloat16
    args = [tensor(x) for x in (q, kc, vc, table, lens, cu, g)]
    args[0], args[6] = args[0].to(element), args[6].to(element)
    with torch.no_grad():
        return best_seconds(lambda: gat.paged_attention(
            *args, causal=True, num_splits=splits), repeat)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", default="1,8")
    p.add_argument("--contexts", default="1024,4096")
    p.add_argument("--page", type=int, default=16)
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--splits", default="",
                   help="kv-splits counts to time beside the default "
                        "(auto), e.g. 1,2,4")
    p.add_argument("--matrix-units", default="",
                   help="compile ours with this matrix-units (fma, "
                        "avx512-bf16, amx) instead of the host's; the torch "
                        "op is then not timed")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[:args.threads]
    os.sched_setaffinity(0, cpus)
    os.environ["OMP_NUM_THREADS"] = str(len(cpus))
    fixed = [int(n) for n in args.splits.split(",") if n]
    rows = ["B,context,page,dtype,threads,load_1min,auto_splits,ours_ms,"
            "torch_op_ms,"
            + "".join(f"splits_{n}_ms," for n in fixed)
            + "torch_ms,ours_gbs,torch_gbs,ours_over_torch,matrix_units"]
    print("| B | context | dtype | auto splits | ours ms | torch op ms |"
          + "".join(f" kv-splits={n} ms |" for n in fixed)
          + " torch ms | ours GB/s | torch GB/s | ours / torch |")
    print("|---" * (10 + len(fixed)) + "|")
    for dtype in args.dtypes.split(","):
        size = 4 if dtype == "f32" else 2
        for b in (int(x) for x in args.batches.split(",")):
            for ctx in (int(x) for x in args.contexts.split(",")):
                load = os.getloadavg()[0]
                auto = paged.cpu_key_splits(b, b, HQ, HKV, ctx, len(cpus))
                units = args.matrix_units
                mine = ours(b, ctx, args.page, args.repeat, dtype,
                            units=units)
                op = (float("nan") if units else
                      ours(b, ctx, args.page, args.repeat, dtype,
                           torch_op=True))
                forced = [ours(b, ctx, args.page, args.repeat, dtype, n,
                               units=units)
                          for n in fixed]
                child = subprocess.run(
                    [sys.executable, "-c", TORCH, str(b), str(ctx),
                     str(args.page), str(args.repeat),
                     {"f32": "float32", "bf16": "bfloat16"}[dtype]],
                    check=True, capture_output=True, text=True)
                theirs = json.loads(child.stdout)["seconds"]
                kv = 2 * b * ctx * HKV * D * size / 1e9
                row = ((b, ctx, args.page, dtype, len(cpus), load, auto,
                        mine * 1e3, op * 1e3)
                       + tuple(x * 1e3 for x in forced)
                       + (theirs * 1e3, kv / mine, kv / theirs,
                          theirs / mine, units or "host"))
                rows.append(",".join(f"{x:.4g}" if isinstance(x, float)
                                     else str(x) for x in row))
                print(f"| {b} | {ctx} | {dtype} | {auto} | {mine * 1e3:.2f} | "
                      f"{op * 1e3:.2f} |"
                      + "".join(f" {x * 1e3:.2f} |" for x in forced)
                      + f" {theirs * 1e3:.2f} | {kv / mine:.1f} | "
                      f"{kv / theirs:.1f} | {theirs / mine:.2f}x |",
                      flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out,
                        f"cpu-paged-{datetime.date.today().isoformat()}.csv")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {path} ({len(cpus)} threads)")


if __name__ == "__main__":
    main()
