"""Run the backward's mma.sync kernels on the CPU emulator.

`convert-gated-attention-to-nvgpu` replaces a
gated_attention.attention_backward by three kernels (preprocessing, dK/dV,
dQ; docs/Backward.md); this module compiles the op of a case, launches the
kernels through gated_attention.launcher.run_backward on the emulator
(testing/emulate.py) and checks every element of dq, dk, dv and dg against
the float64 gradients within accuracy_backward's bound for these kernels
(gpu=True: P, dS and dY rounded to the element type for the tensor cores,
L read in f32):

    python3 -m gated_attention.testing.emulate_backward \\
        --case 'dtype=bf16,d=64,dv=64,hq=4,hkv=2,sq=40,skv=70,causal=0|1'

Sizes are static in the compiled op (the kernels take Sq and Skv as
arguments either way). The emulator is slow: keep cases small.
"""

import argparse
import sys

import numpy as np

from .. import accuracy_backward, config, dtypes, launcher, mlir
from ..dtypes import from_bits, to_bits
from . import emulate


def backward_module(cfg):
    """func.func @case(q, k, v, out, dout[, g], lse) -> gradients: one
    gated_attention.attention_backward with the forward's lse, static
    sizes."""
    return mlir.backward_kernel_function(cfg, "case", static=True)


def compile_backward(cfg, opt=None, options=""):
    """{layout: (kernel op, launch description)} of the backward's three
    kernels for `cfg`."""
    return emulate._kernels_by_layout(
        backward_module(cfg), opt, options, launcher.BACKWARD_LAYOUTS,
        f"{cfg.describe()}: no backward kernels")


def case_inputs(cfg, seed):
    """(inputs, dout, out, lse) of a case: the op's inputs, a random
    output gradient and the saved output (the exact forward rounded to T),
    L rounded to f32."""
    x = cfg.inputs(seed)
    rng = np.random.default_rng(seed + 1)
    dout = dtypes.round_to(rng.standard_normal(cfg.shapes()["result"]),
                           cfg.dtype)
    with np.errstate(invalid="ignore"):
        out = dtypes.round_to(cfg.reference(x), cfg.dtype)
    lse = accuracy_backward.log_sum_exp(cfg, x).astype(np.float32)
    return x, dout, out, lse


def run_case(cfg, seed, opt=None, options=""):
    """({gradient: float64 array}, inputs, dout) of the kernels on case
    `cfg` with inputs of `seed`."""
    kernels = emulate.Emulator().kernels(compile_backward(cfg, opt, options))
    x, dout, out, lse = case_inputs(cfg, seed)
    gated = cfg.gate != "none"

    def bits(a):
        return to_bits(np.ascontiguousarray(a, np.float32).ravel(),
                       cfg.dtype)
    arrays = {"q": bits(x["query"]), "k": bits(x["key"]),
              "v": bits(x["value"]), "out": bits(out), "dout": bits(dout),
              "lse": np.ascontiguousarray(lse).ravel()}
    if gated:
        arrays["gate"] = bits(x["gate"])
    got = launcher.run_backward(kernels, arrays, b=cfg.b, sq=cfg.sq,
                                skv=cfg.skv)
    shapes = cfg.shapes()
    names = {"dq": "query", "dk": "key", "dv": "value", "dg": "gate"}
    grads = {names[n]: from_bits(v, cfg.dtype).astype(np.float64).reshape(
        shapes[names[n]]) for n, v in got.items()}
    return grads, x, dout


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opt", help="gated-attention-opt to use")
    args = p.parse_args(argv)
    try:
        cfgs = [c for s in args.case for c in config.parse_cases(s)]
    except ValueError as e:
        p.error(str(e))
    if not cfgs:
        p.error("no cases")
    failures = 0
    for i, cfg in enumerate(cfgs):
        seed = args.seed * 1000 + i
        grads, x, dout = run_case(cfg, seed, args.opt)
        results = accuracy_backward.compare_backward(cfg, grads, x, dout,
                                                     gpu=True)
        ok = all(r.ok for r in results.values())
        failures += not ok
        worst = " ".join(f"{n}={r.ratio:.3f}"
                         for n, r in results.items())
        print(f"{'PASS' if ok else 'FAIL'} {cfg.describe()} err/bound "
              f"{worst}", flush=True)
    print(f"{len(cfgs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
