# REQUIRES: torch
# RUN: %PYTHON %s
"""The CPU backward with register tiles that do not divide what they tile
(gated-attention-vectorize-tiles splits the remainder into a tile of its
own): AVX2-sized code (vector-bits=256, 6-row tiles over the backward's
64-row blocks: 60 + 4) and 32-column tiles over D 80 and Dv 48 (64 + 16,
32 + 16), against the float64 gradients within
accuracy_backward.backward_error_bound. GQA, causal with rows that see no
key, ragged blocks, f32 and bf16 (f32 products at 256 bits), reading the
forward's L and recomputing it."""

from gated_attention import accuracy_backward, config
from gated_attention.testing.cpu_backward import gradients
from gated_attention.testing.emulate_backward import case_inputs


CASES = [
    ("vector-bits=256", dict(hq=8, hkv=2, sq=70, skv=150, d=64, dv=32,
                             causal=True)),
    ("vector-bits=256", dict(hq=2, hkv=1, sq=130, skv=90, d=32, dv=64)),
    ("vector-bits=512 matrix-units=fma register-cols=32",
     dict(hq=4, hkv=2, sq=90, skv=70, d=80, dv=48, causal=True)),
]
for n, (options, fields) in enumerate(CASES):
    for dtype in ("f32", "bf16"):
        cfg = config.AttentionConfig(b=2, dtype=dtype, gate="sigmoid",
                                     **fields)
        x, dout, out, lse = case_inputs(cfg, 60 + n)
        for given in (lse, None):
            grads = gradients(cfg, options, x, dout, out, given)
            result = accuracy_backward.compare_backward(
                cfg, grads, x, dout, **accuracy_backward.cpu_model(cfg, "fma"))
            assert all(r.ok for r in result.values()), (options,
                                                        cfg.describe(), result)
            print(f"PASS [{options}] {cfg.describe()}"
                  f"{' lse' if given is not None else ''} "
                  + " ".join(f"d{k[0]}:{r.ratio:.2g}"
                             for k, r in result.items()))
