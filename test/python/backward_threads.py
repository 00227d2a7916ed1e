# REQUIRES: torch
# RUN: %PYTHON %s
"""The CPU backward's gradients are bitwise identical whatever the number
of OpenMP threads: its dQ is a sum of per-split partials whose split count
comes from the shapes alone (min(4, key blocks, ceil(16 / (B Hkv))):
docs/Backward.md) and are added in a fixed order, never in the order the
threads finish. Each thread count runs in a process of its own
(OMP_NUM_THREADS is read when the runtime starts), on a configuration
with 4 splits over 5 key blocks, ragged tails and GQA (f32, and bf16
reading the forward's log-sum-exp), and prints a hash of each gradient;
the hashes must agree (a dQ whose partials were added
as threads finish, or split by thread count, would not be)."""

import hashlib
import os
import subprocess
import sys

CHILD = r"""
import hashlib, sys
import numpy as np, torch
import gated_attention.torch  # noqa: F401 (registers the ops)
from gated_attention import config, dtypes, reference
cfg = config.parse_cases(sys.argv[1])[0]
x = cfg.inputs(3)
rng = np.random.default_rng(4)
dout = dtypes.round_to(rng.standard_normal(cfg.shapes()["result"]),
                       cfg.dtype)
out = dtypes.round_to(cfg.reference(x), cfg.dtype)
dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[cfg.dtype]
t = lambda a: torch.from_numpy(np.ascontiguousarray(a, np.float64)).to(dtype)
lse = None
if sys.argv[2] == "lse":
    lse = torch.from_numpy(np.ascontiguousarray(reference.log_sum_exp(
        x["query"], x["key"], cfg.scale, cfg.causal), np.float32))
grads = torch.ops.gated_attention.attention_backward(
    t(x["query"]), t(x["key"]), t(x["value"]), t(out), t(dout),
    t(x["gate"]), lse, causal=cfg.causal, scale=cfg.scale)
# (bf16 to f32 is exact: the same bits.)
print(" ".join(hashlib.sha256(g.float().numpy().tobytes()).hexdigest()[:16]
               for g in grads))
"""

# B 1, Hkv 2: ceil(16 / 2) = 8 > 4 splits; Skv 300 is 5 key blocks of 64.
# f32 recomputing L, and bf16 reading the forward's L (the training path,
# whose Sᵀ = K Qᵀ multiplies bf16 pairs where the CPU has AVX512-BF16).
SHAPE = "b=1,hq=4,hkv=2,sq=130,skv=300,d=64,dv=64,causal=1"
for case, lse in ((f"dtype=f32,{SHAPE}", "none"),
                  (f"dtype=bf16,{SHAPE}", "lse")):
    hashes = {}
    for threads in (1, 2, 3):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        proc = subprocess.run([sys.executable, "-c", CHILD, case, lse],
                              env=env, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{threads} threads: {proc.stderr.strip()}")
        hashes[threads] = proc.stdout.split()
        print(f"{case} lse={lse}, {threads} thread(s): dq dk dv dg "
              f"{' '.join(hashes[threads])}")
    assert len(hashes[1]) == 4, hashes
    assert all(h == hashes[1] for h in hashes.values()), \
        "gradients differ between thread counts"
print("backward threads: bitwise identical")
