"""Run by out-of-tree.test with the installed Python package: it finds the
installed tool beside it, loads the out-of-tree plugin and runs a variant."""
import os
import sys

import numpy as np

import gated_attention as ga
from gated_attention import runner

prefix, plugin = sys.argv[1], sys.argv[2]
assert ga.__file__.startswith(prefix), ga.__file__
opt = runner.tool_paths()["opt"]
assert opt == os.path.join(prefix, "bin", "gated-attention-opt"), opt
ga.load_plugin(plugin)
ga.register_gate("#gate_variants.tanh", np.tanh)
rng = np.random.default_rng(0)
q, k, v, g = (rng.standard_normal(s) for s in
              ((1, 4, 20, 16), (1, 2, 30, 16), (1, 2, 30, 16), (1, 4, 20, 16)))
out = ga.attention(q, k, v, g, causal=True, gate="#gate_variants.tanh")
ref = ga.attention_reference(q, k, v, g, causal=True, gate="#gate_variants.tanh")
err = np.abs(out - ref).max()
assert err < 1e-5, err
print(f"installed package with {opt}: tanh gate max_abs_err={err:.3g}")
