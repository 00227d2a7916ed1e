"""Run the backward's kernels on the CPU emulator.

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

With --options 'chip=sm_90a kernel=wgmma' the dK/dV and dQ kernels are
the sm_90a ones (wgmma, warp specialized), run on emulate_wgmma's model.

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


def run_case(cfg, seed, opt=None, options="", schedule=None, compiled=None):
    """({gradient: float64 array}, inputs, dout, the dK/dV and dQ kernels'
    names)
    of the kernels on case `cfg` with inputs of `seed`; `options`
    convert-gated-attention-to-nvgpu's, `schedule` as for
    emulate.Emulator; `compiled`: compile_backward's result, to run
    kernels changed since (fault injection)."""
    if compiled is None:
        compiled = compile_backward(cfg, opt, options)
    kernels = emulate.Emulator(schedule).kernels(compiled)
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
    return grads, x, dout, " ".join(compiled[layout][1]["kernel"]
                                    for layout in ("backward-kv", "backward-q"))


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opt", help="gated-attention-opt to use")
    p.add_argument("--options", default="",
                   help="convert-gated-attention-to-nvgpu's options, e.g. "
                   "'chip=sm_90a kernel=wgmma' (the sm_90a dK/dV and dQ "
                   "kernels)")
    p.add_argument("--repeat", action="store_true",
                   help="run each case again under another interleaving of "
                   "the sm_90a kernels' warpgroups (--schedule + 1) and "
                   "require bitwise identical gradients: no kernel adds in "
                   "an order that depends on timing")
    p.add_argument("--schedule", type=int, default=None,
                   help="seed of the emulator's warpgroup interleavings "
                   "(sm_90a kernels); default: producer first")
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
        grads, x, dout, names = run_case(cfg, seed, args.opt, args.options,
                                      args.schedule)
        results = accuracy_backward.compare_backward(cfg, grads, x, dout,
                                                     gpu=True)
        ok = all(r.ok for r in results.values())
        if args.repeat:
            again = run_case(cfg, seed, args.opt, args.options,
                             (args.schedule or 0) + 1)[0]
            same = all(np.array_equal(grads[n], again[n], equal_nan=True)
                       for n in grads)
            ok = ok and same
            if not same:
                print(f"FAIL {cfg.describe()}: the second run differs")
        failures += not ok
        worst = " ".join(f"{n}={r.ratio:.3f}"
                         for n, r in results.items())
        print(f"{'PASS' if ok else 'FAIL'} {cfg.describe()} {names} err/bound "
              f"{worst}", flush=True)
    print(f"{len(cfgs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
