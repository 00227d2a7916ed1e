# REQUIRES: cuda-gpu
# RUN: %PYTHON %s
"""Dense decode steps on a CUDA GPU: ga.attention(device="cuda") with
Sq = 1 over Qwen3-Next's heads (16 over 2, D 256) and others, at batch
sizes and lengths where split-KV is taken (B x Hq CTAs below two per SM)
and where it is not, against the float64 reference within the error
model's bound (gated_attention.accuracy). With --prepare, only compiles
the kernels (into GATED_ATTENTION_CACHE_DIR) for a GPU machine without
MLIR."""

import sys

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, cuda, dtypes

# dtype, (hq, hkv, d), gate layout, gate, combine, causal; (B, Skv) pairs.
CASES = [
    ("bf16", (16, 2, 256), "full", "sigmoid", "mul", True),
    ("f16", (8, 1, 128), "headwise", "silu", "add", False),
    ("bf16", (4, 4, 64), None, "sigmoid", "mul", True),
]
# (B 64 fills the GPU without splitting; its Skv is kept short because the
# float64 reference of B 64 x Skv 8192 alone took 45 s on the CPU.)
LENGTHS = [(1, 4096), (4, 1000), (64, 1024), (2, 17)]

rng = np.random.default_rng(5)
prepare = "--prepare" in sys.argv
failures = 0
for dtype, (hq, hkv, d), layout, gate, combine, causal in CASES:
    kw = dict(causal=causal, combine=combine, gate=gate)
    for b, skv in LENGTHS:
        shapes = [(b, hq, 1, d), (b, hkv, skv, d), (b, hkv, skv, d)]
        if layout:
            shapes.append((b, hq, 1, d if layout == "full" else 1))
        ops = [dtypes.round_to(rng.standard_normal(s), dtype) for s in shapes]
        cfg = ga.config_for(*ops, dtype=dtype, **kw)
        if prepare:
            ga.CudaAttention.compile(cfg)
            cuda.compile_decode_kernels(cfg)
            break
        out = ga.attention(*ops, dtype=dtype, device="cuda", **kw)
        ref = ga.attention_reference(*ops, **kw)
        inputs = dict(zip(("query", "key", "value", "gate"), ops))
        result = accuracy.compare(cfg, out, ref, inputs)
        failures += not result.ok
        print(f"{'PASS' if result.ok else 'FAIL'} decode {cfg.describe()} "
              f"{accuracy.describe(result)}", flush=True)
if prepare:
    print(f"compiled {len(CASES)} configurations")
elif failures:
    sys.exit(f"{failures} failed")
else:
    print("decode: all passed")
