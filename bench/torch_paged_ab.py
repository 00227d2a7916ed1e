"""A decode step through the torch paged op (gated_attention.torch.
paged_attention on CPU tensors), timed with several copies of the Python
package, alternated: each round runs every package in a fresh process
(B = 1, Qwen3-Next's heads: Hq 16 over Hkv 2, D 256, causal, a sigmoid
gate, 16-token pages shuffled in the cache; f32 and bf16 over 1024 and
4096 keys). A package is a `python/` directory, e.g. of a `git worktree`
of another commit; every package runs this build's gated-attention-opt
(GATED_ATTENTION_OPT, else the one the package finds). A figure is the
best (and the median) call of at least 1.5 s of calls after warm-up, the
best round's.

    .venv/bin/python bench/torch_paged_ab.py --package new=python
        [--package old=/tmp/old/python ...] [--rounds 3] [--csv PATH]
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import gated_attention.torch as gat
torch.manual_seed(0)
res = {}
for dtype in (torch.float32, torch.bfloat16):
    for ctx in (1024, 4096):
        page, hq, hkv, d = 16, 16, 2, 256
        nb = ctx // page
        kc = torch.randn(nb, page, hkv, d).to(dtype)
        vc = torch.randn(nb, page, hkv, d).to(dtype)
        bt = torch.randperm(nb, dtype=torch.int32)[None, :]
        lens = torch.tensor([ctx], dtype=torch.int32)
        cu = torch.tensor([0, 1], dtype=torch.int32)
        q, g = torch.randn(1, hq, d).to(dtype), torch.randn(1, hq, d).to(dtype)
        step = lambda: gat.paged_attention(q, kc, vc, bt, lens, cu, g,
                                           causal=True)
        for _ in range(5):
            step()
        ts = []
        end = time.perf_counter() + 1.5
        while time.perf_counter() < end or len(ts) < 200:
            t = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t)
        ts.sort()
        res[f"{str(dtype)[6:]},{ctx}"] = (ts[0] * 1e3, ts[len(ts) // 2] * 1e3)
print(json.dumps(res))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--package", action="append", required=True,
                   help="NAME=PATH of a python/ directory")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--csv", help="write one row per (package, case) here")
    args = p.parse_args()
    packages = []
    for spec in args.package:
        name, sep, path = spec.partition("=")
        if not sep or not name or not os.path.isdir(
                os.path.join(path, "gated_attention")):
            p.error(f"--package {spec!r}: expected NAME=PATH of a directory "
                    f"holding gated_attention/")
        packages.append((name, os.path.abspath(path)))
    best = {}
    for _ in range(args.rounds):
        for name, path in packages:
            out = subprocess.run([sys.executable, "-c", CHILD, path],
                                 check=True, capture_output=True, text=True)
            for case, (low, median) in json.loads(out.stdout).items():
                old = best.get((name, case))
                if old is None or low < old[0]:
                    best[(name, case)] = (low, median)
    first = packages[0][0]
    rows = ["package,dtype,context,best_ms,median_ms,best_over_first"]
    print(f"| package | dtype, keys | best ms | median ms | {first} / this |")
    print("|---|---|---|---|---|")
    for (name, case), (low, median) in best.items():
        ratio = best[(first, case)][0] / low
        rows.append(f"{name},{case},{low:.4f},{median:.4f},{ratio:.3f}")
        print(f"| {name} | {case.replace(',', ', ')} | {low:.3f} | "
              f"{median:.3f} | {ratio:.2f}x |")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(f"# {' '.join(sys.argv)}\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
