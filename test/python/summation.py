# RUN: %PYTHON %s
"""The tiled CPU path's sums do not grow with Skv, and its accumulator does
not overflow where the result is representable. Each case compares with
the float64 reference under the error model of the tiled path
(accuracy.error_bound with its key block: plain sums of at most one key
block for l and of at most 1024 keys plus one block for acc, compensated
across them), which does not grow with Skv either.

- Equal scores over a constant V: every key adds the same rounding error,
  which a plain running sum accumulated linearly (4096 keys: 2.8 times
  even the sqrt(Skv) bound of a plain sum; 2^23 keys: 0.1057 for 0.1, and
  V = 3 came back as 3.33).
- Scores rising by less than half an ulp of 1 per key block: each block's
  rescaling exp(m - m') rounded to 1 and the weights of early keys drifted
  by the sum of the rises (2^20 keys: 1.8 bounds even under the old,
  sqrt(Skv) model).
- Values near the f32 range: two keys of 2e38 summed to inf where the mean
  is 2e38; the same in bf16, in GQA with a causal mask, and mixed signs,
  and over weights that span the f32 exponent range.
- Values near the bottom of the normal range: the scaling that keeps large
  values finite must not push small ones into the subnormals.
"""

import numpy as np

import gated_attention as ga
from gated_attention import accuracy

KEY_BLOCK = accuracy.CPU_KEY_BLOCK


def check(name, q, k, v, causal=False, dtype="f32", scale=None):
    cfg = ga.AttentionConfig(b=1, hq=q.shape[1], hkv=k.shape[1],
                             sq=q.shape[2], skv=k.shape[2], d=q.shape[3],
                             dv=v.shape[3], gate="none", causal=causal,
                             dtype=dtype, scale=scale)
    x = {"query": q, "key": k, "value": v, "gate": None}
    out = ga.attention(q, k, v, causal=causal, dtype=dtype, scale=scale)
    out = np.asarray(out, np.float64)
    result = accuracy.compare(cfg, out, cfg.reference(x), x, KEY_BLOCK)
    assert result.ok, (name, accuracy.describe(result), result.worst)
    print(f"PASS {name} {accuracy.describe(result)}")


# 1. Equal scores (q = 0) over a constant V. At V = 0.01 every product
# rounds the same way: a chunk of acc that took one rounding a key (not
# one a key block, OnlineSoftmaxTile::chunkStep's tiles summing from zero)
# exceeded the bound 1.32 times at Skv 2048.
for skv, value in ((4096, 0.1), (2048, 0.01), (1 << 23, 0.1),
                   (1 << 23, 3.0)):
    check(f"equal scores, Skv={skv}, V={value}", np.zeros((1, 1, 1, 1)),
          np.zeros((1, 1, skv, 1)), np.full((1, 1, skv, 1), value))

# 1b. The same in bf16 and f16. In every type acc sums key blocks plainly
# within chunks of 1024 keys and adds the chunks with compensation
# (OnlineSoftmaxTile::chunkStep): summed plainly over all keys, 2^23 keys
# of 0.1 would be 5.6% off (numpy's float32 running sum of them).
for dtype in ("bf16", "f16"):
    check(f"equal scores, Skv=2^23, V=0.1, {dtype}", np.zeros((1, 1, 1, 2)),
          np.zeros((1, 1, 1 << 23, 2)), np.full((1, 1, 1 << 23, 2), 0.1),
          dtype=dtype)

# 2. Scores rising by 0.9 * 2^-25 per block of 64 keys, V = +1 then -1.
skv = 1 << 20
j = np.arange(skv)
rising = np.float32((j // KEY_BLOCK) * 0.9 * 2.0**-25).astype(np.float64)
check("slowly rising scores, Skv=2^20", np.ones((1, 1, 1, 1)),
      rising.reshape(1, 1, skv, 1),
      np.where(j < skv // 2, 1.0, -1.0).reshape(1, 1, skv, 1), scale=1.0)

# 3. Values near the f32 range.
check("two keys of 2e38", np.zeros((1, 1, 1, 4)), np.zeros((1, 1, 2, 4)),
      np.full((1, 1, 2, 4), 2e38))
check("two keys of 2e38, bf16", np.zeros((1, 1, 1, 4)),
      np.zeros((1, 1, 2, 4)), np.full((1, 1, 2, 4), 2e38), dtype="bf16")
rng = np.random.default_rng(3)
check("+-3e38 and 1, GQA 4/2, causal, 300 keys",
      rng.standard_normal((1, 4, 5, 8)), rng.standard_normal((1, 2, 300, 8)),
      rng.choice([-3e38, 3e38, 1.0], size=(1, 2, 300, 8)), causal=True)
check("3e38 with 100000 keys", rng.standard_normal((1, 1, 3, 4)),
      rng.standard_normal((1, 1, 100000, 4)),
      np.full((1, 1, 100000, 4), 3e38))

# 3b. The same scale sigma = 2^k < 1 over weights that span the whole f32
# exponent range: the weights' exp adds k to 2^n's exponent (no multiply)
# and gives 0 where 2^(n + k) would be subnormal; scores from -120 to 0.
skv = 640
check("3e38 and -3e38 over weights from e^-120 to 1",
      np.ones((1, 1, 2, 1)),
      np.linspace(-120.0, 0.0, skv).reshape(1, 1, skv, 1),
      rng.choice([-3e38, 3e38], size=(1, 1, skv, 2)), scale=1.0)
check("1e38 over weights from e^-120 to 1, bf16", np.ones((1, 1, 2, 1)),
      np.linspace(-120.0, 0.0, skv).reshape(1, 1, skv, 1),
      np.full((1, 1, skv, 2), 1e38), dtype="bf16", scale=1.0)

# 4. Values near the bottom of the normal range, and subnormal.
for value in (2e-38, 3e-42):
    check(f"4096 keys of {value}", np.zeros((1, 1, 1, 4)),
          np.zeros((1, 1, 4096, 4)), np.full((1, 1, 4096, 4), value))
