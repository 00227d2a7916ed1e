# RUN: %PYTHON %s
"""The paged op on the CPU with values near the top of the f32 range: the
weights are scaled down by the block's max|v| (the overflow scale), which
the tile reads from the packed V when a key block spans pages (16-token
pages, 64-key blocks: two full blocks and a partial one per sequence), in
f32 and in bf16 (whose max|v| takes the bf16 bits from the high half of
the packed f32). A max|v| read wrong leaves the scale at 1 and P V
overflows to inf. Within the error model, against the float64
reference."""

import dataclasses

import numpy as np

from gated_attention import paged
from gated_attention.testing import paged_cases

rng = np.random.default_rng(7)
for dtype in ("f32", "bf16"):
    case = paged_cases.PagedCase(16, 4, 2, 32, 32, (3, 1), (150, 140),
                                 causal=True, dtype=dtype)
    a = paged_cases.build(case, rng)
    # |v| up to 3e38 (the largest f32 is 3.4e38): a block's P V sums up to
    # 64 of them.
    v = a["value_cache"]
    a["value_cache"] = paged_cases.round_to(
        np.clip(v * 1e38, -3e38, 3e38), dtype)
    out = paged.paged_attention(
        a["q"], a["key_cache"], a["value_cache"], a["block_table"],
        a["seq_lens"], a["cu_seqlens_q"], a["g"], dtype=dtype,
        num_splits=1, **case.kwargs())
    assert np.isfinite(np.asarray(out, np.float64)).all(), \
        f"{case.describe()}: the result overflowed"
    worst = paged_cases.check(case, a, out)
    print(f"PASS {case.describe()}: worst error / bound {worst:.3f}")
