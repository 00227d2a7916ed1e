# RUN: %PYTHON %s
"""Empty rows, NaN and inf: attention_reference and the compiled op agree
on what they document. Skv = 0 gives 0 (mul) or act(g) (add) in every row,
never an exception; a NaN or inf in q or k makes the rows that see it NaN
(as in torch, never 0); a NaN in v the columns of the rows that see its
key; a NaN in g the outputs it gates; inputs beyond the element type's
range round to inf; a result beyond it (bf16 / f16 overflow) is inf."""

import numpy as np

import gated_attention as ga
from gated_attention import reference

rng = np.random.default_rng(5)


def operands(sq=6, skv=7, d=8, dv=8, hq=2, hkv=1):
    return [rng.standard_normal(s) for s in ((1, hq, sq, d), (1, hkv, skv, d),
                                             (1, hkv, skv, dv),
                                             (1, hq, sq, dv))]


def same(a, b):
    """Equal NaN patterns, values within f32 rounding elsewhere."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(np.isnan(a), np.isnan(b)), (a, b)
    ok = ~np.isnan(a)
    assert np.allclose(a[ok], b[ok], rtol=1e-5, atol=1e-6), (a, b)


# 1. Skv = 0: every row sees no key.
q, k, v, g = operands(skv=0)
for combine, want in (("mul", np.zeros_like(g)),
                      ("add", reference.activation(g, "silu"))):
    ref = ga.attention_reference(q, k, v, g, gate="silu", combine=combine)
    assert np.array_equal(ref, want), (combine, ref)
    out = ga.attention(q, k, v, g, gate="silu", combine=combine)
    same(out, want)
no_gate = ga.attention_reference(q, k, v)
assert np.array_equal(no_gate, np.zeros((1, 2, 6, 8)))
same(ga.attention(q, k, v), no_gate)
# The direct reference too (causal, and Sq = 0).
assert reference.gated_attention_reference(q, k, v, g, causal=True).shape == \
    (1, 2, 6, 8)
assert ga.attention_reference(q[:, :, :0], k, v, g[:, :, :0]).shape == \
    (1, 2, 0, 8)
print("PASS Skv = 0: 0 (mul), act(g) (add), 0 without a gate")

# 2. NaN and inf in q / k: the rows that see them are NaN, in the reference
# and the compiled op alike; the other rows are unaffected.
q, k, v, g = operands()
q[0, 0, 1, 3] = np.nan            # head 0, row 1
q[0, 1, 4, 0] = np.inf            # head 1, row 4
for causal in (False, True):
    ref = ga.attention_reference(q, k, v, g, causal=causal)
    assert np.isnan(ref[0, 0, 1]).all() and np.isnan(ref[0, 1, 4]).all()
    assert np.isnan(ref).sum() == 2 * 8, ref
    same(ga.attention(q, k, v, g, causal=causal), ref)
q, k, v, g = operands()
k[0, 0, 5, 2] = np.nan            # key 5: causal rows 0-3 do not see it
ref = ga.attention_reference(q, k, v, g, causal=True)
assert np.isnan(ref[:, :, 4:]).all() and not np.isnan(ref[:, :, :4]).any()
same(ga.attention(q, k, v, g, causal=True), ref)
print("PASS NaN / inf in q and k: NaN rows (never 0)")

# 3. NaN in v: the rows that see its key get NaN in that column; NaN in g:
# the outputs it gates.
q, k, v, g = operands()
v[0, 0, 2, 5] = np.nan
g[0, 1, 3, 1] = np.nan
ref = ga.attention_reference(q, k, v, g)
out = ga.attention(q, k, v, g)
assert np.isnan(ref[..., 5]).all() and np.isnan(out[..., 5]).all()
assert np.isnan(ref[0, 1, 3, 1]) and np.isnan(out[0, 1, 3, 1])
assert np.isnan(ref).sum() == np.isnan(out).sum() == 2 * 6 + 1
same(out, ref)
print("PASS NaN in v (its column) and g (its output)")

# 4. Ranges: an input beyond f16's range is inf in f16 (so a row that sees
# it is NaN); a result beyond it is inf.
q, k, v, g = operands()
v16 = v.copy()
v16[0, 0, :, 0] = 7e4                  # beyond f16's 65504: inf
out = ga.attention(q, k, v16, g, dtype="f16")
assert np.isinf(out[..., 0]).all(), out[..., 0]
big = v.copy()
big[0, 0, :, 0] = 6e4                   # representable...
out = ga.attention(q, k, big, np.full_like(g, 20.0), gate="silu",
                   dtype="f16")         # ... times SiLU(20) = 20: inf
assert np.isposinf(np.asarray(out[..., 0], np.float64)).all(), out[..., 0]
bf = v.copy()
bf[0, 0, :, 1] = 3e38                   # bf16's largest is ~3.39e38
out = ga.attention(q, k, bf, np.full_like(g, 20.0), gate="silu",
                   dtype="bf16")
assert np.isposinf(np.asarray(out[..., 1], np.float64)).all(), out[..., 1]
assert np.isfinite(np.asarray(out[..., 2:], np.float64)).all()
print("PASS f16 / bf16 overflow: inf")
