# REQUIRES: cuda-gpu
# RUN: %PYTHON %s
"""The Python package on a CUDA GPU: ga.attention(device="cuda") for the
built-in gates and for the example plugin's gate variants, against the
float64 reference; decode steps (Sq = 1 over a few thousand keys) run
split-KV (the keys split across CTAs, the gate applied in the merge). With --prepare, only compiles the kernels (into
GATED_ATTENTION_CACHE_DIR), for a GPU machine without MLIR that then runs
this file with the same cache."""

import os
import sys

import numpy as np

import gated_attention as ga
from gated_attention import cuda, dtypes

PLUGIN = os.environ.get("GATE_VARIANTS_PLUGIN")
TOL = {"f16": 2e-3, "bf16": 2e-2}
# dtype, (b, hq, hkv, sq, skv, d), gate layout, gate, combine, causal
CASES = [
    ("bf16", (2, 8, 2, 300, 300, 128), "full", "sigmoid", "mul", True),
    ("f16", (1, 4, 4, 77, 333, 64), "headwise", "silu", "add", False),
    ("bf16", (1, 16, 2, 513, 513, 256), "full", "sigmoid", "mul", True),
    ("bf16", (3, 4, 1, 45, 200, 64), None, None, "mul", True),
    ("bf16", (2, 8, 2, 300, 300, 128), "shared", "#gate_variants.tanh", "mul",
     True),
    ("f16", (1, 4, 2, 129, 129, 128), "full",
     "#gate_variants.sigmoid<temperature = 2.0 : f32>", "add", False),
]
# Lengths a compiled kernel is reused for; the last two are decode steps
# whose B x Hq CTAs leave the GPU idle (split-KV).
RELENGTHS = [(1, 17, 17), (2, 260, 900), (2, 1, 3000), (1, 1, 700)]

ga.register_gate("#gate_variants.tanh", np.tanh)
ga.register_gate("#gate_variants.sigmoid<temperature = 2.0 : f32>",
                 lambda g: 1.0 / (1.0 + np.exp(-g / 2.0)))
if PLUGIN and os.path.exists(PLUGIN):
    ga.load_plugin(PLUGIN)


def operands(rng, dtype, shape, layout, b=None, sq=None, skv=None):
    b0, hq, hkv, sq0, skv0, d = shape
    b, sq, skv = b or b0, sq or sq0, skv or skv0
    shapes = [(b, hq, sq, d), (b, hkv, skv, d), (b, hkv, skv, d)]
    if layout:
        shapes.append({"full": (b, hq, sq, d), "headwise": (b, hq, sq, 1),
                       "shared": (b, 1, sq, d)}[layout])
    return [dtypes.round_to(rng.standard_normal(s), dtype) for s in shapes]


rng = np.random.default_rng(4)
prepare = "--prepare" in sys.argv
failures = 0
for dtype, shape, layout, gate, combine, causal in CASES:
    kw = dict(causal=causal, combine=combine, gate=gate or "sigmoid")
    for lengths in [(None, None, None)] + RELENGTHS:
        ops = operands(rng, dtype, shape, layout, *lengths)
        if prepare:
            cfg = ga.config_for(*ops, dtype=dtype, **kw)
            ga.CudaAttention.compile(cfg)
            cuda.compile_decode_kernels(cfg)
            break
        out = ga.attention(*ops, dtype=dtype, device="cuda", **kw)
        ref = ga.attention_reference(*ops, **kw)
        err = np.abs(out - ref)
        ok = bool(np.all(err <= TOL[dtype] * (1 + np.abs(ref))))
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} cuda dtype={dtype} "
              f"q={ops[0].shape} kv={ops[1].shape} gate={gate} "
              f"combine={combine} causal={int(causal)} "
              f"max_abs_err={err.max():.3g}", flush=True)
if prepare:
    print(f"compiled {len(CASES)} kernels")
elif failures:
    sys.exit(f"{failures} failed")
else:
    print(f"all passed")
