"""Differential check of gated_attention.attention on the CPU.

Builds one module with a function per configuration, compiles it with
gated-attention-opt (by default `--gated-attention-to-llvm`), runs it with
mlir-runner and compares every printed result with the float64 numpy
reference on the same (rounded) inputs:

    python3 -m gated_attention.check \\
        --case 'hq=8,hkv=2,gate=sigmoid|silu,causal=0|1' --random 10 --seed 7

A case is 'key=value,...'; 'a|b' in a value expands into the cross product.
Keys: b hq hkv sq skv d dv gate combine causal gh (per_head|shared)
gw (elementwise|headwise) dtype (f32|f16|bf16) scale dyn (e.g. b+sq+skv).
Prints one PASS/FAIL line per case and 'N passed, M failed'; exits 1 on any
failure.
"""

import argparse
import shlex
import sys

import numpy as np

from . import config, dtypes, mlir, runner


def compare(cfg, out, ref):
    """(ok, max_abs_err, atol, rtol) of `out` against `ref`."""
    atol, rtol = dtypes.TOLERANCES[cfg.dtype]
    if out.shape != ref.shape:
        return False, float("inf"), atol, rtol
    err = np.abs(out - ref)
    # NaN in `out` makes the comparison false, as it must.
    ok = bool(np.all(err <= atol + rtol * np.abs(ref)))
    max_err = float(np.max(err)) if err.size else 0.0
    return ok, max_err, atol, rtol


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", default=[],
                        help="configuration spec (repeatable)")
    parser.add_argument("--random", type=int, default=0,
                        help="add N random configurations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pipeline", default="--gated-attention-to-llvm",
                        help="gated-attention-opt arguments that lower to LLVM")
    parser.add_argument("--emit", metavar="FILE",
                        help="also write the generated module to FILE")
    args = parser.parse_args(argv)

    cfgs = [c for spec in args.case for c in config.parse_cases(spec)]
    rng = np.random.default_rng(args.seed)
    cfgs += [config.random_config(rng) for _ in range(args.random)]
    if not cfgs:
        parser.error("no cases: give --case and/or --random")

    cases = [(cfg, cfg.inputs(seed=args.seed * 1000 + i))
             for i, cfg in enumerate(cfgs)]
    text = mlir.test_module(cases)
    if args.emit:
        with open(args.emit, "w") as f:
            f.write(text)
    try:
        lowered = runner.compile_module(text, shlex.split(args.pipeline))
        outputs = runner.parse_memrefs(runner.run_module(lowered))
    except runner.ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if len(outputs) != len(cases):
        print(f"error: {len(outputs)} results for {len(cases)} cases",
              file=sys.stderr)
        return 1

    failed = 0
    for i, ((cfg, inputs), out) in enumerate(zip(cases, outputs)):
        ok, err, atol, rtol = compare(cfg, out, cfg.reference(inputs))
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} case{i} {cfg.describe()} "
              f"max_abs_err={err:.3g} atol={atol:g} rtol={rtol:g}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
