# RUN: %PYTHON %s
"""The CPU backward of an op whose types carry B, Sq and Skv (static
shapes, as a frontend or a hand-written function gives them), compiled by
--gated-attention-to-llvm and run through its C interface, against the
float64 gradients within accuracy_backward.backward_error_bound. Such an
op once failed to verify after tiling (slices of dynamic type from static
sizes), and once tiled its key-block pass lost the marker that vectorizes
the tiles (right gradients, 20-60x as long: tile-backward-static.mlir pins
the marking; this is not a timed test)."""

import dataclasses

import numpy as np

from gated_attention import accuracy_backward, config, dtypes, mlir, native

CASES = [
    # Ragged blocks, causal with rows that see no key, GQA 2.
    "dtype=f32,d=64,dv=64,hq=4,hkv=2,sq=40,skv=70,causal=1",
    # Whole blocks, MHA, B 2.
    "dtype=bf16,d=64,dv=32,hq=2,hkv=2,b=2,sq=128,skv=64,causal=0",
    # Headwise shared gate, GQA 8, f16.
    "dtype=f16,d=128,dv=64,hq=8,hkv=1,sq=33,skv=33,causal=1,gw=headwise,"
    "gh=shared",
]
NAMES = ("query", "key", "value", "gate")


def compiled(cfg, lse):
    c = dataclasses.replace(cfg, dynamic=())
    return native.SharedLibrary(
        "module {\n" + mlir.backward_function(c, "f", lse=lse) + "}\n",
        openmp=True)


def call(lib, cfg, x, out, dout, lse):
    ins = [x["query"], x["key"], x["value"], out, dout, x["gate"]]
    ins = [np.ascontiguousarray(dtypes.kernel_operand(a, cfg.dtype))
           for a in ins]
    if lse is not None:
        ins.append(np.ascontiguousarray(lse, np.float32))
    grads = [np.zeros(x[n].shape, dtypes.storage_type(cfg.dtype))
             for n in NAMES]
    lib.call_into("f", ins + grads)
    return grads


for case in CASES:
    cfg = config.parse_cases(case)[0]
    x = cfg.inputs(seed=5)
    rng = np.random.default_rng(6)
    with np.errstate(invalid="ignore"):
        out = dtypes.round_to(cfg.reference(x), cfg.dtype)
    dout = dtypes.round_to(rng.standard_normal(out.shape), cfg.dtype)
    for lse in (None, accuracy_backward.log_sum_exp(cfg, x)):
        static = compiled(cfg, lse is not None)
        grads = call(static, cfg, x, out, dout, lse)
        got = {n: dtypes.kernel_result(g, cfg.dtype).astype(np.float64)
               for n, g in zip(NAMES, grads)}
        result = accuracy_backward.compare_backward(
            cfg, got, x, dout, **accuracy_backward.cpu_model(cfg))
        worst = {n: round(r.ratio, 3) for n, r in result.items()}
        assert all(r.ok for r in result.values()), (case, worst)
        print(f"PASS {case} lse={int(lse is not None)} err/bound {worst}")
print("ok")
