# REQUIRES: avx512bf16
# RUN: %PYTHON %s | FileCheck %s
"""bf16 paged attention with its products on AVX512-BF16 (the path an AMX
host's decode steps take: their 8-row tiles are not AMX's 16), against the
float64 reference within the matrix units' error model (P rounded to bf16,
subnormals flushed). Key blocks that span pages are packed into the pair
layout piece by piece from the pages (test/Dialect/GatedAttention/
Transforms/vectorize-tiles-paged.mlir checks the code on any host), and
max|v| reads the packed values: values up to 3e38 test its scale."""

import dataclasses
import os

import numpy as np

from gated_attention import dtypes
from gated_attention.testing import paged_cases

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)

# Sequences longer than a block, so that some blocks are whole and packed
# from their pieces (a partial one is assembled). 256-key blocks: 528-token
# pages (pieces of 16), and decode with GQA 8 (an AMX host's 8-row decode
# tiles) on 16-token pages; 48-key blocks: 64-token pages (pieces of 16)
# and a prefill split over query blocks.
UNITS = "matrix-units=avx512-bf16 kv-splits=1"
extra = paged_cases.PagedCase(16, 8, 1, 64, 64, (1, 4), (300, 270),
                              causal=True)
RUNS = {f"--gated-attention-to-llvm={UNITS}": [paged_cases.MATRIX[5], extra],
        f"--gated-attention-to-llvm=key-block=48 query-block=16 {UNITS}":
            [paged_cases.MATRIX[2], paged_cases.MATRIX[10]]}


checked = 0
for pipeline, cases in RUNS.items():
    for case in (dataclasses.replace(c, dtype="bf16") for c in cases):
        a = paged_cases.build(case, rng)
        out = paged_cases.run_cpu(case, a, pipeline)
        worst = paged_cases.check(case, a, out, flush_subnormals=True)
        print(f"PASS [{pipeline}] {case.describe()} err/bound={worst:.3g}")
        # |v| up to 3e38 (the largest f32 is 3.4e38): max|v| (read from the
        # packed pairs) must see them, or the sums overflow to inf.
        a["value_cache"] = dtypes.round_to(
            np.clip(a["value_cache"] * 1e38, -3e38, 3e38), "bf16")
        out = paged_cases.run_cpu(case, a, pipeline)
        assert np.isfinite(np.asarray(out, np.float64)).all(), \
            f"{case.describe()}: the result overflowed"
        worst = paged_cases.check(case, a, out, flush_subnormals=True)
        print(f"PASS [{pipeline}] |v| to 3e38 {case.describe()} "
              f"err/bound={worst:.3g}")
        checked += 2
print(f"{checked} checked")
# CHECK-NOT: FAIL
# CHECK: 8 checked
