# RUN: %PYTHON %s
"""NaN inputs propagate on every CPU lowering, not only the default one:
the tiled path, the reference lowering (materialized scores) and the SIMT
rows form agree with attention_reference on which outputs are NaN, and a
row that sees no key is still 0 (never NaN) next to them. Every lowering
normalizes with the same helper (1/l, 0 for l == 0, NaN for NaN)."""

import numpy as np

import gated_attention as ga

PIPELINES = {
    "tiled": ("--gated-attention-to-llvm",),
    "reference": ("--gated-attention-to-llvm=reference=1",),
    "rows": ("--convert-gated-attention-to-parallel-rows",
             "--gated-attention-to-llvm"),
}

rng = np.random.default_rng(11)
# Causal with Sq > Skv: rows 0 and 1 see no key (0); q NaN in row 4 of head
# 0; k NaN at key 5 (seen by rows >= 5 + Sq - Skv = 7 only).
b, hq, hkv, sq, skv, d = 1, 2, 1, 9, 7, 8
q = rng.standard_normal((b, hq, sq, d)).astype(np.float32)
k = rng.standard_normal((b, hkv, skv, d)).astype(np.float32)
v = rng.standard_normal((b, hkv, skv, d)).astype(np.float32)
g = rng.standard_normal((b, hq, sq, d)).astype(np.float32)
q[0, 0, 4, 1] = np.nan
k[0, 0, 5, 3] = np.nan

ref = ga.attention_reference(q, k, v, g, causal=True)
assert (ref[:, :, :2] == 0).all()
cfg = ga.config_for(q, k, v, g, causal=True)
text = ga.attention_ir(cfg)
for name, pipeline in PIPELINES.items():
    lib = ga.compile_cpu(text, pipeline=pipeline, openmp=True)
    out = lib.call("attention", [q, k, v, g], 4, np.float32)
    assert np.array_equal(np.isnan(out), np.isnan(ref)), (name, out)
    ok = ~np.isnan(ref)
    assert np.allclose(out[ok], ref[ok], rtol=1e-4, atol=1e-5), name
    assert (out[:, :, :2] == 0).all(), name
    print(f"PASS {name}: {int(np.isnan(out).sum())} NaN outputs as the "
          f"reference, empty rows 0")
