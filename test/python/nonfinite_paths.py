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


def operands(hq, hkv, sq, skv, d=8):
    """q, k, v, g of B = 1, in f32."""
    shapes = ((hq, sq), (hkv, skv), (hkv, skv), (hq, sq))
    return [rng.standard_normal((1, h, s, d)).astype(np.float32)
            for h, s in shapes]


# Causal with Sq > Skv: rows 0 and 1 see no key (0); q NaN in row 4 of head
# 0; k NaN at key 5 (seen by rows >= 5 + Sq - Skv = 7 only).
q, k, v, g = operands(hq=2, hkv=1, sq=9, skv=7)
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

# Several key blocks (the tiled path's are 64-128 keys): the row max drops
# NaN scores (maxnumf), so a block holding a NaN score can still move m, and
# larger scores in later blocks move it again; the NaN's row must stay NaN.
# Head 0: k NaN at key 40 (block 0), large keys at 150 and 290 (later
# blocks); head 1: an inf in k at key 200.
q, k, v, g = operands(hq=2, hkv=2, sq=5, skv=300)
k[0, 0, 40, 2] = np.nan
k[0, 0, 150] *= 40
k[0, 0, 290] *= 80
k[0, 1, 200, 5] = np.inf
q[0, 1, 3, 5] = 0.0    # row 3 of head 1: 0 * inf, a NaN score
ref = ga.attention_reference(q, k, v, g)
# Head 0 sees its NaN key in every row; head 1's rows whose score is +inf
# or NaN (row 3: 0 * inf) are NaN, those at -inf are not.
assert np.isnan(ref[0, 0]).all() and np.isnan(ref[0, 1, 3]).all()
assert not np.isnan(ref[0, 1]).all()
k_finite = k.copy()
k_finite[0, 0, 40, 2] = 0.5
k_finite[0, 1, 200, 5] = 3.0
ref_finite = ga.attention_reference(q, k_finite, v, g)
assert not np.isnan(ref_finite).any()
cfg = ga.config_for(q, k, v, g)
text = ga.attention_ir(cfg)
for name, pipeline in PIPELINES.items():
    lib = ga.compile_cpu(text, pipeline=pipeline, openmp=True)
    out = lib.call("attention", [q, k, v, g], 4, np.float32)
    assert np.array_equal(np.isnan(out), np.isnan(ref)), (name, out)
    out = lib.call("attention", [q, k_finite, v, g], 4, np.float32)
    # Scores reach about 100 here: f32 rounds s - m to eps |s - m| (up to
    # ~200), so a weight exp(s - m) is good to ~2.4e-5 relative; 2e-4
    # leaves a factor 8.
    assert np.allclose(out, ref_finite, rtol=2e-4, atol=1e-5), (
        name, np.abs(out - ref_finite).max())
    print(f"PASS {name}: NaN and inf scores across key blocks: "
          f"{int(np.isnan(out).sum())} NaN outputs in the finite case")
