# RUN: %PYTHON %s
"""ga.attention returns its result in the requested element type: float32,
float16, ml_dtypes.bfloat16 (PyPI's ml_dtypes, in the .venv scripts/setup
makes); without ml_dtypes everything but a bf16 result still works, and a
bf16 result is a clear ImportError before anything is compiled."""

import sys

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, dtypes

rng = np.random.default_rng(1)
shapes = [(1, 4, 9, 16), (1, 2, 13, 16), (1, 2, 13, 16), (1, 4, 9, 16)]
q, k, v, g = (rng.standard_normal(s) for s in shapes)
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

for dtype, want in (("f32", np.float32), ("f16", np.float16),
                    ("bf16", ml_dtypes and ml_dtypes.bfloat16)):
    if want is None:
        continue   # checked below, without ml_dtypes
    out = ga.attention(q, k, v, g, causal=True, dtype=dtype)
    assert out.dtype == np.dtype(want), (dtype, out.dtype)
    assert out.shape == (1, 4, 9, 16)
    # The values are those of the element type: the reference on the
    # rounded inputs bounds them.
    x = {n: dtypes.round_to(a, dtype)
         for n, a in zip(("query", "key", "value", "gate"), (q, k, v, g))}
    cfg = ga.config_for(q, k, v, g, causal=True, dtype=dtype)
    result = accuracy.compare(cfg, out.astype(np.float64), cfg.reference(x),
                              x)
    assert result.ok, (dtype, result)
    # An input in the element type is taken as it is.
    again = ga.attention(*(a.astype(want) for a in (q, k, v, g)),
                         causal=True, dtype=dtype)
    assert again.dtype == out.dtype and np.array_equal(
        again.astype(np.float64), out.astype(np.float64)), dtype
    print(f"PASS dtype={dtype} -> {out.dtype} {accuracy.describe(result)}")
if ml_dtypes is None:
    print("ml_dtypes is not installed here: bf16 results not checked "
          "(scripts/setup installs it into .venv)")

# Empty batches and rows come back as empty arrays of the element type.
empty = ga.attention(q[:, :, :0], k, v, g[:, :, :0], dtype="f16")
assert empty.shape == (1, 4, 0, 16) and empty.dtype == np.float16

# Without ml_dtypes (hidden from this process): the package imports, f32 and
# f16 work, bf16 fails early with what to install.
for name in [m for m in sys.modules if m.split(".")[0] == "ml_dtypes"]:
    del sys.modules[name]
sys.modules["ml_dtypes"] = None   # makes `import ml_dtypes` fail
compiles = []
real_cpu = ga.CpuAttention
ga.compiler.CpuAttention = lambda cfg: compiles.append(cfg) or real_cpu(cfg)
assert ga.attention(q, k, v, g, dtype="f16").dtype == np.float16
try:
    ga.attention(q, k, v, g, dtype="bf16")
except ImportError as e:
    assert "pip install ml_dtypes" in str(e), e
else:
    raise AssertionError("a bf16 result without ml_dtypes")
assert all(c.dtype != "bf16" for c in compiles), "compiled before failing"
print("PASS without ml_dtypes: f16 works, bf16 says `pip install ml_dtypes`")
