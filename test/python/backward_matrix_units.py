# REQUIRES: torch, avx512bf16
# RUN: %PYTHON %s
"""The CPU backward by --gated-attention-to-llvm's matrix-units, run on this
CPU (it has vdpbf16ps; elsewhere this test is UNSUPPORTED and
tile-backward-avx512-bf16.mlir and Pipelines/backward-matrix-units.mlir
check the code): a bf16 op on avx512-bf16, and on amx where this CPU has
AMX tiles, multiplies all five products in bf16 pairs, rounding dY, P and dS to bf16 as torch's bf16 backward and the
GPU kernels do, and stays within accuracy_backward's bound for rounded
operands (cpu_model), but not within the f32-operand one (dV is ~100 bounds
off: the pairs are really used); with matrix-units=fma the same op keeps
f32 operands and the f32-operand bound; f32 and f16 ops give the same bits
under both (they have no pairs). GQA, causal with rows that see no key,
ragged blocks, Dv != D, each gate kind, reading the forward's L (the
training path) or recomputing it."""

import itertools

import numpy as np

from gated_attention import accuracy_backward, config, native
from gated_attention.testing import cpu_backward
from gated_attention.testing.emulate_backward import case_inputs


def gradients(cfg, units, x, dout, out, lse):
    """The gradients of `cfg`'s backward compiled with
    matrix-units=`units` (float64 arrays)."""
    return cpu_backward.gradients(cfg, f"matrix-units={units}", x, dout,
                                  out, lse)


CASES = [
    dict(hq=8, hkv=2, sq=70, skv=150, d=64, dv=64, gate="sigmoid",
         causal=True),
    dict(hq=2, hkv=2, sq=40, skv=100, d=128, dv=32, gate="silu",
         combine="add"),
    dict(hq=4, hkv=1, sq=90, skv=40, d=64, dv=96, gate="none", causal=True),
    dict(hq=2, hkv=1, sq=64, skv=128, d=128, dv=128, gate="ns_sigmoid",
         gate_width="headwise", gate_heads="shared"),
]
# AMX where this CPU has it (what matrix-units=host takes there).
PAIRED = ["avx512-bf16"] + (["amx"] if {"amx_tile", "amx_bf16"}
                            <= native.cpu_flags() else [])
f32_model_misses = 0
for (n, fields), units in itertools.product(enumerate(CASES), PAIRED):
    cfg = config.AttentionConfig(b=2, dtype="bf16", **fields)
    x, dout, out, lse = case_inputs(cfg, 40 + n)
    for given in (lse, None):
        paired = gradients(cfg, units, x, dout, out, given)
        model = accuracy_backward.cpu_model(cfg, units)
        assert model["rounded_operands"], model
        result = accuracy_backward.compare_backward(cfg, paired, x, dout,
                                                    **model)
        assert all(r.ok for r in result.values()), (cfg.describe(), result)
        f32_model = accuracy_backward.compare_backward(cfg, paired, x, dout)
        f32_model_misses += not f32_model["value"].ok
        wide = gradients(cfg, "fma", x, dout, out, given)
        assert not any(accuracy_backward.cpu_model(cfg, "fma").values())
        result_fma = accuracy_backward.compare_backward(cfg, wide, x, dout)
        assert all(r.ok for r in result_fma.values()), (cfg.describe(),
                                                        result_fma)
        print(f"PASS {cfg.describe()}{' lse' if given is not None else ''} "
              f"{units} " + " ".join(f"d{k[0]}:{r.ratio:.2g}"
                                        for k, r in result.items())
              + f" (f32-operand model dv:{f32_model['value'].ratio:.3g}), "
              "fma " + " ".join(f"d{k[0]}:{r.ratio:.2g}"
                                for k, r in result_fma.items()))
# P rounded to bf16 moves dV far outside the f32-operand bound.
assert f32_model_misses == 2 * len(CASES) * len(PAIRED), f32_model_misses
print("PASS the f32-operand bound rejects every paired bf16 dV")

# f32 and f16: no pairs, the same bits under both options.
for dtype in ("f32", "f16"):
    cfg = config.AttentionConfig(b=2, hq=4, hkv=2, sq=70, skv=150, d=64,
                                 dv=32, gate="sigmoid", causal=True,
                                 dtype=dtype)
    x, dout, out, lse = case_inputs(cfg, 7)
    a = gradients(cfg, "avx512-bf16", x, dout, out, lse)
    b = gradients(cfg, "fma", x, dout, out, lse)
    for name in a:
        assert np.array_equal(a[name], b[name]), (dtype, name)
    print(f"PASS {dtype}: the same bits with matrix-units=avx512-bf16 and fma")
