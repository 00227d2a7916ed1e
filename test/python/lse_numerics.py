# RUN: %PYTHON %s
"""The log-sum-exp result of gated_attention.attention on every CPU
lowering (the tiled online softmax, unsplit and split-KV, the reference
lowering, the SIMT rows form) against the float64 reference.log_sum_exp, within
accuracy.lse_error_bound: GQA, causal with rows that see no key (+inf),
ragged tails (Sq and Skv not multiples of the blocks), Skv = 0, each
element type. Asking for it leaves the output unchanged (bitwise)."""

import dataclasses

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, dtypes, mlir, reference

# (pipeline, key block of compensated sums, split-KV parts)
PIPELINES = {
    "tiled": (("--gated-attention-to-llvm",), accuracy.CPU_KEY_BLOCK, 1),
    # The keys of every row in 3 parts merged (a part may hold no key).
    "split": (("--gated-attention-to-llvm=kv-splits=3",),
              accuracy.CPU_KEY_BLOCK, 3),
    "reference": (("--gated-attention-to-llvm=reference=1",), None, 1),
    "rows": (("--convert-gated-attention-to-parallel-rows",
              "--gated-attention-to-llvm"), None, 1),
}
# (dtype, Hq, Hkv, D, Dv, causal, gate, gate heads, gate width), each run
# at several (B, Sq, Skv) by one compile (B, Sq, Skv dynamic).
CONFIGS = [
    ("f32", 4, 2, 16, 8, True, "sigmoid", 4, 8),
    ("bf16", 8, 1, 32, 32, False, "silu", 1, 1),
    ("f16", 2, 2, 8, 16, True, "none", 0, 0),
]
SHAPES = [(1, 37, 70), (2, 9, 5), (1, 3, 0), (1, 1, 130)]

rng = np.random.default_rng(31)
worst = 0.0
for dtype, hq, hkv, d, dv, causal, gate, gh, gw in CONFIGS:
    b0, sq0, skv0 = SHAPES[0]
    shapes = dict(q=(b0, hq, sq0, d), k=(b0, hkv, skv0, d),
                  v=(b0, hkv, skv0, dv))
    g = None if gate == "none" else np.zeros((b0, gh, sq0, gw))
    cfg = ga.config_for(np.zeros(shapes["q"]), np.zeros(shapes["k"]),
                        np.zeros(shapes["v"]), g, causal=causal,
                        gate=None if gate == "none" else gate, dtype=dtype)
    cfg = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
    text = ("module {\n" + mlir.destination_function(cfg, "with_lse", True)
            + mlir.destination_function(cfg, "without", False) + "}\n")
    for name, (pipeline, key_block, splits) in PIPELINES.items():
        lib = ga.compile_cpu(text, pipeline=pipeline)
        for b, sq, skv in SHAPES:
            def rounded(shape):
                x = rng.standard_normal(shape) * 2
                return dtypes.round_to(x, dtype)
            q, k = rounded((b, hq, sq, d)), rounded((b, hkv, skv, d))
            v = rounded((b, hkv, skv, dv))
            gi = None if gate == "none" else rounded((b, gh, sq, gw))
            ins = [np.ascontiguousarray(dtypes.kernel_operand(x, dtype))
                   for x in (q, k, v, gi) if x is not None]
            out = np.zeros((b, hq, sq, dv), dtypes.storage_type(dtype))
            lse = np.full((b, hq, sq), np.nan, np.float32)
            lib.call_into("with_lse", ins + [out, lse])
            plain = np.zeros_like(out)
            lib.call_into("without", ins + [plain])
            where = f"{name} {dtype} causal={causal} B={b} Sq={sq} Skv={skv}"
            assert np.array_equal(out, plain), where + ": output changed"

            ref = reference.log_sum_exp(q, k, None, causal)
            empty = np.isinf(ref)
            assert skv > 0 or empty.all(), where
            assert np.array_equal(np.isinf(lse), empty) and \
                (lse[empty] > 0).all(), (where, lse[empty])
            bound = accuracy.lse_error_bound(
                cfg, {"query": q, "key": k}, key_block, splits=splits)
            err = np.abs(lse[~empty] - ref[~empty])
            if err.size:
                ratio = (err / bound[~empty]).max()
                assert ratio <= 1.0, (where, ratio)
                worst = max(worst, ratio)
# The package's entry point (the tiled path) on a GQA bf16 causal shape
# with rows that see no key.
q = dtypes.round_to(rng.standard_normal((1, 4, 12, 16)), "bf16")
k = dtypes.round_to(rng.standard_normal((1, 2, 9, 16)), "bf16")
v = dtypes.round_to(rng.standard_normal((1, 2, 9, 16)), "bf16")
out, lse = ga.attention_lse(q, k, v, causal=True, dtype="bf16")
assert out.shape == (1, 4, 12, 16) and lse.dtype == np.float32
ref = reference.log_sum_exp(q, k, None, True)
assert (np.isinf(lse) == np.isinf(ref)).all() and np.isinf(lse[:, :, :3]).all()
cfg = ga.config_for(q, k, v, causal=True, dtype="bf16")
bound = accuracy.lse_error_bound(cfg, {"query": q, "key": k},
                                 accuracy.CPU_KEY_BLOCK)
finite = ~np.isinf(ref)
assert (np.abs(lse[finite] - ref[finite]) <= bound[finite]).all()
print(f"lse: worst err/bound {worst:.3f}")
assert worst > 0.0
