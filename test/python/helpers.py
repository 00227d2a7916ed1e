# RUN: %PYTHON %s
"""Self-test of the Python helpers: the reference against a scalar-loop
definition of the op, the tolerance check, output parsing, bf16 rounding."""

import itertools
import math

import numpy as np

from gated_attention import config, dtypes, runner
from gated_attention.testing.check import compare
from gated_attention.reference import gated_attention_reference


def naive(q, k, v, g, scale, causal, gate, combine):
    """The op's definition, one output element at a time."""
    b_, hq, sq, d = q.shape
    hkv, skv, dv = k.shape[1], k.shape[2], v.shape[3]
    out = np.zeros((b_, hq, sq, dv))
    act = {"sigmoid": lambda x: 1 / (1 + math.exp(-x)),
           "silu": lambda x: x / (1 + math.exp(-x)),
           "ns_sigmoid": lambda x: 0.5 + 0.5 / (1 + math.exp(-x)),
           "none": None}[gate]
    for b, h, i in itertools.product(range(b_), range(hq), range(sq)):
        kh = h // (hq // hkv)
        visible = [j for j in range(skv) if not causal or j <= i + skv - sq]
        s = [scale * sum(q[b, h, i, t] * k[b, kh, j, t] for t in range(d))
             for j in visible]
        m = max(s) if s else 0.0
        w = [math.exp(x - m) for x in s]
        total = sum(w)
        for e in range(dv):
            y = (sum(wj * v[b, kh, j, e] for wj, j in zip(w, visible)) / total
                 if visible else 0.0)
            if act is None:  # no gate: plain attention
                out[b, h, i, e] = y
                continue
            gv = g[b, h if g.shape[1] > 1 else 0, i, e if g.shape[3] > 1 else 0]
            out[b, h, i, e] = y * act(gv) if combine == "mul" else y + act(gv)
    return out


rng = np.random.default_rng(0)
checked = 0
for _ in range(40):
    cfg = config.random_config(rng)
    cfg = config.AttentionConfig(**{**cfg.__dict__, "sq": min(cfg.sq, 9),
                                    "skv": min(cfg.skv, 9)})
    x = cfg.inputs(seed=checked)
    scale = cfg.scale if cfg.scale is not None else 1 / math.sqrt(cfg.d)
    want = naive(x["query"], x["key"], x["value"], x["gate"], scale,
                 cfg.causal, cfg.gate, cfg.combine)
    got = cfg.reference(x)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), cfg.describe()
    assert not np.isnan(got).any()
    checked += 1
print(f"reference matches the scalar definition on {checked} configurations")

# Empty causal rows are exactly 0 (mul) / act(g) (add).
cfg = config.AttentionConfig(hq=2, hkv=1, sq=6, skv=2, causal=True)
x = cfg.inputs(seed=5)
y = cfg.reference(x)
assert np.all(y[:, :, :4, :] == 0.0)

# The comparison fails on a perturbation beyond tolerance and on NaN.
ref = np.linspace(-2, 2, 24).reshape(1, 2, 3, 4)
for dtype, (atol, rtol) in dtypes.TOLERANCES.items():
    c = config.AttentionConfig(dtype=dtype)
    assert compare(c, ref.copy(), ref)[0]
    bumped = ref.copy()
    bumped[0, 1, 2, 3] += 2 * (atol + rtol * abs(ref[0, 1, 2, 3]))
    assert not compare(c, bumped, ref)[0]
    nan = ref.copy()
    nan[0, 0, 0, 0] = np.nan
    assert not compare(c, nan, ref)[0]
    assert not compare(c, ref[:, :1], ref)[0]
    # Where the reference itself is NaN or inf, only the same value agrees.
    special = ref.copy()
    special[0, 0, 0, :2] = [np.nan, np.inf]
    assert compare(c, special.copy(), special).ok
    assert not compare(c, np.where(np.isnan(special), 0, special), special).ok
print("compare rejects perturbed, NaN and misshapen results")

# printMemrefF32 output parsing.
text = ("Unranked Memref base@ = 0x1 rank = 2 offset = 0 sizes = [2, 2] "
        "strides = [2, 1] data = \n[[1,   -2.5e-05], \n [nan,   -inf]]\n"
        "Unranked Memref base@ = 0x2 rank = 1 offset = 0 sizes = [3] "
        "strides = [1] data = \n[0.75,  1e+10,  -3]\n")
a, b = runner.parse_memrefs(text)
assert a.shape == (2, 2) and a[0, 1] == -2.5e-05 and np.isnan(a[1, 0])
assert a[1, 1] == -np.inf and list(b) == [0.75, 1e10, -3.0]
print("memref prints parse")

# bf16 rounds to nearest even; f16 through numpy.
one = 1.0
assert dtypes.round_to(one + 2**-8, "bf16") == 1.0          # tie -> even
assert dtypes.round_to(one + 3 * 2**-8, "bf16") == 1 + 2**-6  # tie -> even (up)
assert dtypes.round_to(one + 2**-7, "bf16") == 1 + 2**-7      # exact
assert dtypes.to_bytes([1.0], "bf16") == b"\x80\x3f"
assert dtypes.to_bytes([1.0], "f16") == b"\x00\x3c"
print("bf16 / f16 rounding and bits")
