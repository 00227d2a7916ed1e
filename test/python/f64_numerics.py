# RUN: %PYTHON %s
"""f64 on the CPU: ga.attention and ga.attention_lse with dtype="f64" run
the reference lowering in f64 arithmetic (--gated-attention-to-llvm sends
f64 ops there) and agree with the float64 reference within the error
model at f64's unit roundoff (accuracy.error_bound, lse_error_bound:
2^-53 for 2^-24). GQA, causal with rows that see no key, Sq != Skv,
Skv = 0, each gate kind, combine add, headwise and shared gates. The
bound is tight enough that f32 arithmetic fails it."""

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, mlir, reference

# (Hq, Hkv, D, Dv, causal, gate, combine, gate heads, gate width)
CONFIGS = [
    (4, 2, 16, 8, True, "sigmoid", "mul", 4, 8),
    (4, 1, 8, 16, False, "silu", "add", 1, 1),
    (2, 2, 32, 32, True, "ns_sigmoid", "mul", 2, 1),
    (2, 1, 16, 16, True, None, None, 0, 0),
]
SHAPES = [(1, 11, 7), (2, 5, 19), (1, 3, 0)]

rng = np.random.default_rng(64)
worst = worst_lse = 0.0
for hq, hkv, d, dv, causal, gate, combine, gh, gw in CONFIGS:
    for b, sq, skv in SHAPES:
        q = rng.standard_normal((b, hq, sq, d))
        k = rng.standard_normal((b, hkv, skv, d))
        v = rng.standard_normal((b, hkv, skv, dv))
        g = None if gate is None else 2 * rng.standard_normal((b, gh, sq, gw))
        kw = dict(causal=causal, gate=gate, combine=combine)
        out = ga.attention(q, k, v, g, dtype="f64", **kw)
        out2, lse = ga.attention_lse(q, k, v, g, dtype="f64", **kw)
        where = f"{gate} {combine} causal={causal} B={b} Sq={sq} Skv={skv}"
        assert out.dtype == np.float64 and lse.dtype == np.float64, where
        assert np.array_equal(out, out2), where + ": lse changed the output"

        cfg = ga.config_for(q, k, v, g, dtype="f64", **kw)
        inputs = {"query": q, "key": k, "value": v, "gate": g}
        # The op's scale is an f32 attribute: the f32 rounding of D^-1/2.
        scale = float(np.float32(1 / np.sqrt(d)))
        ref = reference.gated_attention_reference(
            q, k, v, g, scale=scale, causal=causal, gate=cfg.gate,
            combine=cfg.combine)
        result = accuracy.compare(cfg, out, ref, inputs)
        assert result.ok, (where, accuracy.describe(result))
        worst = max(worst, result.ratio)

        lse_ref = reference.log_sum_exp(q, k, scale, causal)
        empty = np.isinf(lse_ref)
        assert skv > 0 or empty.all(), where
        assert np.array_equal(np.isinf(lse), empty), where
        bound = accuracy.lse_error_bound(cfg, inputs)
        if (~empty).any():
            ratio = (np.abs(lse[~empty] - lse_ref[~empty])
                     / bound[~empty]).max()
            assert ratio <= 1.0, (where, ratio)
            worst_lse = max(worst_lse, ratio)

# The bound is an f64 one: the same inputs through the f32 path (f32
# arithmetic, inputs rounded to f32) are far outside it.
q, k, v = (rng.standard_normal(s) for s in
           ((1, 2, 9, 16), (1, 2, 9, 16), (1, 2, 9, 16)))
cfg = ga.config_for(q, k, v, dtype="f64")
ref = reference.gated_attention_reference(
    q, k, v, None, scale=float(np.float32(0.25)), gate="none")
f32 = accuracy.compare(cfg, ga.attention(q, k, v, dtype="f32"), ref,
                       {"query": q, "key": k, "value": v, "gate": None})
assert not f32.ok and f32.ratio > 1e3, accuracy.describe(f32)
# The printing test modules (check.py's) read f32: f64 is refused there.
try:
    mlir.test_module([(cfg, {"query": q, "key": k, "value": v})])
    raise AssertionError("an f64 test module was printed through f32")
except ValueError as e:
    assert "printMemrefF32" in str(e), e
print(f"f64: worst err/bound {worst:.3f} (out), {worst_lse:.3f} (lse); "
      f"the f32 path {f32.ratio:.3g}")
assert worst > 0.0
