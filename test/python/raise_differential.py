# RUN: rm -rf %t && mkdir %t
# RUN: %PYTHON %s %gated_attention_src_root %t
"""Raising does not change what a graph computes: mutants of the unfused
forms of raise.mlir and of the frontends' graphs (a constant, predicate,
map, softmax dimension or arithmetic op changed at random, with a fixed
seed) that raising still matches, compiled with and without raising, agree
(gated_attention.testing.raise_differential; run it with more mutants and
other seeds to search further). First, the comparison can fail: a graph
whose scale differs from the one compiled as written is caught."""
import glob
import sys

import numpy as np

from gated_attention.testing import raise_differential as rd

root, tmp = sys.argv[1], sys.argv[2]
files = [f"{root}/test/Dialect/GatedAttention/Transforms/raise.mlir",
         *sorted(glob.glob(f"{root}/test/Frontends/Inputs/*.mlir"))]

form = next(f for f in rd.forms(files[:1]) if f.name == "batch_matmul_softmax")
other_scale = form.text.replace("arith.constant 0.125 : f32",
                                "arith.constant 0.25 : f32")
assert other_scale != form.text
differ = rd.compare(form, other_scale, np.random.default_rng(0),
                    written_text=form.text)
assert differ > rd.MAX_FRACTION, differ
assert rd.compare(form, form.text, np.random.default_rng(0)) == 0.0
print(f"PASS a different scale is caught ({differ:.0%} of the elements)")

sys.exit(rd.main([*files, "--mutants", "40", "--seed", "2026",
                  "--keep", tmp]))
