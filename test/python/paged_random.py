# RUN: %PYTHON %s 10 | FileCheck %s
"""gated_attention.paged_attention's CPU lowering on cases drawn at random
over its shape and option space (paged_cases.random_case: head dims that
are not multiples of 16, pages of 16 to 528 tokens, GQA up to 16, key and
query blocks, split-KV, AVX2 code, bf16 products on AVX512-BF16 where the
host runs them), each against the float64 reference within the error
model. The suite draws 10 cases from GATED_ATTENTION_TEST_SEED (default
0); a longer search: `PYTHONPATH=python .venv/bin/python
test/python/paged_random.py 200` with other seeds."""

import os
import sys

import numpy as np

from gated_attention import native
from gated_attention.testing import paged_cases

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)
pairs = "avx512_bf16" in native.cpu_flags()
# bf16 products on this host's matrix units by default (AMX; AVX512-BF16 on
# AMD) flush subnormals too.
host_units = native.host_matrix_units() != "fma"
count = int(sys.argv[1])
failed = 0
for n in range(count):
    case, options, splits = paged_cases.random_case(rng, pairs)
    pipeline = "--gated-attention-to-llvm=" + " ".join(
        f"{k}={v}" for k, v in options.items())
    a = paged_cases.build(case, rng)
    try:
        out = paged_cases.run_cpu(case, a, pipeline)
        worst = paged_cases.check(
            case, a, out, splits=splits,
            flush_subnormals=case.dtype == "bf16" and (
                "matrix-units" in options or host_units))
        print(f"PASS [{pipeline}] {case.describe()} err/bound={worst:.3g}")
    except (AssertionError, RuntimeError, ValueError) as e:
        failed += 1
        print(f"FAIL [{pipeline}] {case.describe()} (seed {SEED}, case {n}): "
              f"{e}")
print(f"{count - failed} passed, {failed} failed")
# CHECK-NOT: FAIL
# CHECK: 10 passed, 0 failed
