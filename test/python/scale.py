# RUN: %PYTHON %s
"""The scale attribute is written exactly (the f32 bit pattern: `1e-05`,
`1e+16` and ints do not parse as MLIR float literals) and the tool reads
back the f32 value of the Python number; results match the reference at
tiny, huge and integer scales (a negative one is a ValueError, as for the
op). A scale whose scores overflow f32 upwards gives NaN rows, on the tiled
path and in attention_reference alike; downwards, weight 0."""

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, mlir, runner

rng = np.random.default_rng(2)
shapes = [(1, 2, 6, 8), (1, 1, 7, 8), (1, 1, 7, 8), (1, 2, 6, 8)]
q, k, v, g = (rng.standard_normal(s) for s in shapes)
x = dict(zip(("query", "key", "value", "gate"), (q, k, v, g)))

for scale in (1e-5, 1e16, 2, 0.1, 3.4e38, 1e-30, np.float32(0.7),
              np.int64(3)):
    cfg = ga.AttentionConfig(hq=2, hkv=1, sq=6, skv=7, d=8, dv=8,
                             scale=scale)
    text = ga.attention_ir(cfg)
    want = np.float32(scale)
    literal = f"0x{int(np.array([want]).view(np.uint32)[0]):08X}"
    assert f"scale = {literal} : f32" in text, text
    # The tool parses it and prints the same f32 value back.
    printed = runner.compile_module(text, [])
    value = float(printed.split("scale = ")[1].split(" : f32")[0])
    assert np.float32(value) == want, (scale, value)
    print(f"PASS scale={scale!r} -> {literal} -> {value!r}")

# Results at those scales against the reference (which uses the same f32
# scale). Scores stay in range here.
for scale in (1e-5, 2, 0.3, 7.0):
    out = ga.attention(q, k, v, g, scale=scale)
    ref = ga.attention_reference(q, k, v, g, scale=scale)
    cfg = ga.config_for(q, k, v, g, scale=scale)
    result = accuracy.compare(cfg, out, ref, x)
    assert result.ok, (scale, result)
    print(f"PASS attention scale={scale!r} {accuracy.describe(result)}")

# scale = 3.4e38 (the largest f32 is 3.40282e38): a row whose largest
# score q.k * scale exceeds the f32 range is NaN (inf - inf in the softmax,
# as in torch's SDPA), on the tiled path and in the reference; rows whose
# scores stay in range are ordinary (nearly one-hot) softmax rows.
scale = 3.4e38
qh = np.zeros((1, 2, 6, 8))
kh = np.zeros((1, 1, 7, 8))
kh[0, 0, :, 0] = np.linspace(-1, 1, 7)        # key j: q.k = t * (j/3 - 1)
for row, t in enumerate((0.1, 0.5, 0.9, 1.2, 3.0, -2.0)):
    qh[0, :, row, 0] = t
ref = ga.attention_reference(qh, kh, v, g, scale=scale)
out = ga.attention(qh, kh, v, g, scale=scale)
nan_rows = np.isnan(ref).all(axis=-1)
assert nan_rows[0, 0].tolist() == [False, False, False, True, True, True], \
    nan_rows
assert np.array_equal(np.isnan(out), np.isnan(ref))
ok = ~np.isnan(ref)
assert np.allclose(out[ok], ref[ok], rtol=1e-5, atol=1e-6)
print("PASS scale=3.4e38: rows with an overflowing score are NaN, the "
      "others finite (tiled path and reference)")

# Scores that overflow downwards get weight 0; a row whose scores all do
# sees no key (0, times the gate). Row 0: q.k < 0 for every key, so
# 3e38 * q.k is -inf everywhere; row 1: q.k > 0, +inf: NaN.
kp = np.abs(k) + 0.1
qs = np.abs(q) + 0.1
qs[:, :, 0] = -qs[:, :, 0]
ref = ga.attention_reference(qs, kp, v, g, scale=3e38)
out = ga.attention(qs, kp, v, g, scale=3e38)
assert np.all(ref[:, :, 0] == 0) and np.all(out[:, :, 0] == 0), out[:, :, 0]
assert np.isnan(ref[:, :, 1]).all() and np.isnan(out[:, :, 1]).all()
# Row 2 sees one key (3) whose score is -1e40: the others share the weight.
q2, k2 = q * 1e-3, k * 1e-3
q2[:, :, 2] = 1.0
k2[:, :, 3] = -1e30
ref = ga.attention_reference(q2, k2, v, g, scale=1e10)
out = ga.attention(q2, k2, v, g, scale=1e10)
assert np.isfinite(ref[:, :, 2]).all() and np.isfinite(out[:, :, 2]).all()
without = ga.attention_reference(q2[:, :, 2:3], np.delete(k2, 3, axis=2),
                                 np.delete(v, 3, axis=2), g[:, :, 2:3],
                                 scale=1e10)
assert np.allclose(ref[:, :, 2:3], without, rtol=0, atol=1e-12)
assert np.allclose(out[:, :, 2:3], without, rtol=1e-5, atol=1e-6)
print("PASS scores overflowing downwards: weight 0, rows without a key 0")

# Scales the op does not take are ValueErrors, before anything compiles.
for scale in (-0.3, -1e-30, 0, 1e39, float("nan")):
    try:
        ga.attention(q, k, v, g, scale=scale)
    except ValueError as e:
        assert "scale must be" in str(e), e
    else:
        raise AssertionError(f"scale={scale} accepted")
print("PASS negative, zero, non-finite scales are ValueErrors")

assert mlir.f32_literal(0.125) == "0x3E000000"
