"""Differential check of gated_attention.attention on the CPU.

Builds one module with a function per configuration, compiles it with
gated-attention-opt (by default `--gated-attention-to-llvm`), runs it with
mlir-runner and compares every printed result with the float64 numpy
reference on the same (rounded) inputs:

    python3 -m gated_attention.testing.check \\
        --case 'hq=8,hkv=2,gate=sigmoid|silu,causal=0|1' --random 10 --seed 7

A case is 'key=value,...'; 'a|b' in a value expands into the cross product.
Keys: b hq hkv sq skv d dv gate combine causal gh (per_head|shared)
gw (elementwise|headwise) dtype (f32|f16|bf16) scale dyn (e.g. b+sq+skv).
--paths runs every case through several lowerings of the CPU pipeline:
'tiled' (the default online-softmax path), 'tiled:QxK' (query/key block
sizes Q and K), 'reference' (materialized scores); --matrix-units picks
what multiplies the tiled paths' bf16 tiles (host, fma, avx512-bf16, amx:
the pipeline option), --kv-splits how many parts the tiled paths split
each tile's keys into (auto, the pipeline's default, or N).

Prints one PASS/FAIL line per case and path with the worst ratio of an
element's error to its bound (accuracy.error_bound: the error model of
the element type; a case passes at <= 1) and 'N passed, M failed'; exits 1
on any failure.
"""

import argparse
import shlex
import sys

import numpy as np

from .. import accuracy, config, mlir, native, runner


def compare(cfg, out, ref, inputs=None, key_block=None,
            flush_subnormals=False, splits=1, kernel=None):
    """accuracy.Comparison (ok, max_abs_err, ratio, worst) of `out` against
    the reference `ref`, each element within the error model's bound for
    `inputs` (accuracy.error_bound; `key_block` for the tiled path's
    compensated sums, `flush_subnormals` for its bf16 matrix-unit
    products, `splits` for its split-KV parts, `kernel` for the GPU
    kernel that computed it); NaN in `out` fails unless `ref` is NaN there
    too."""
    return accuracy.compare(cfg, out, ref, inputs, key_block,
                            flush_subnormals, splits, kernel)


def path_splits(path, kv_splits, cfg):
    """The most parts a tiled path splits `cfg`'s keys into: `kv_splits`
    when a count, else what kv-splits=auto can choose (at most one part per
    256 keys, at most 64), for the error model's merge term."""
    if not path.startswith("tiled"):
        return 1
    if kv_splits not in (None, "auto"):
        return int(kv_splits)
    return max(1, min(64, cfg.skv // 256))


def runs_on_matrix_units(path, units, cfg):
    """Whether `path` multiplies `cfg`'s tiles on AVX512-BF16 or AMX (bf16,
    the tiled path), whose products flush subnormals."""
    if cfg.dtype != "bf16" or not path.startswith("tiled"):
        return False
    if units in (None, "host"):
        return native.host_matrix_units() != "fma"
    return units in ("avx512-bf16", "amx")


def path_key_block(path):
    """The key block whose sums the tiled path compensates, for the error
    model (accuracy.error_bound), or None for a path that sums over Skv."""
    if path == "tiled":
        return accuracy.CPU_KEY_BLOCK
    if path.startswith("tiled:"):
        return int(path[len("tiled:"):].partition("x")[2])
    return None


def path_pipeline(path, units=None, kv_splits=None, threads=None):
    """gated-attention-opt arguments for a --paths entry (`units`: the
    tiled paths' matrix-units, `kv_splits` and `threads` their kv-splits
    and the threads it counts; None for the defaults)."""
    tiled = f" matrix-units={units}" if units else ""
    if kv_splits:
        tiled += f" kv-splits={kv_splits}"
    if threads:
        tiled += f" threads={threads}"
    if path == "tiled":
        return ["--gated-attention-to-llvm" + (f"={tiled[1:]}" if tiled else "")]
    if path == "reference":
        return ["--gated-attention-to-llvm=reference=1"]
    if path.startswith("tiled:"):
        q, _, k = path[len("tiled:"):].partition("x")
        return [f"--gated-attention-to-llvm=query-block={int(q)} "
                f"key-block={int(k)}{tiled}"]
    raise ValueError(f"unknown path {path!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", default=[],
                        help="configuration spec (repeatable)")
    parser.add_argument("--random", type=int, default=0,
                        help="add N random configurations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", default="tiled",
                        help="comma-separated: tiled, tiled:QxK, reference")
    parser.add_argument("--matrix-units",
                        choices=("host", "fma", "avx512-bf16", "amx"),
                        help="what multiplies the tiled paths' bf16 tiles "
                             "(default: the pipeline's, host)")
    parser.add_argument("--kv-splits",
                        help="split-KV of the tiled paths: auto (the "
                             "pipeline's default) or a count of parts")
    parser.add_argument("--threads", type=int,
                        help="the threads kv-splits=auto counts (default: "
                             "this host's)")
    parser.add_argument("--pipeline",
                        help="explicit gated-attention-opt arguments that "
                             "lower to LLVM (instead of --paths)")
    parser.add_argument("--emit", metavar="FILE",
                        help="also write the generated module to FILE")
    args = parser.parse_args(argv)

    try:
        cfgs = [c for spec in args.case for c in config.parse_cases(spec)]
    except ValueError as e:
        parser.error(str(e))
    rng = np.random.default_rng(args.seed)
    cfgs += [config.random_config(rng) for _ in range(args.random)]
    if not cfgs:
        parser.error("no cases: give --case and/or --random")

    cases = [(cfg, cfg.inputs(seed=args.seed * 1000 + i))
             for i, cfg in enumerate(cfgs)]
    try:
        text = mlir.test_module(cases)
    except ValueError as e:   # (a case the printing module cannot read)
        parser.error(str(e))
    if args.emit:
        with open(args.emit, "w") as f:
            f.write(text)
    pipelines = ([("custom", shlex.split(args.pipeline))] if args.pipeline
                 else [(p, path_pipeline(p, args.matrix_units,
                                         args.kv_splits, args.threads))
                       for p in args.paths.split(",")])
    refs = [cfg.reference(inputs) for cfg, inputs in cases]
    total = failed = 0
    for name, pipeline in pipelines:
        try:
            lowered = runner.compile_module(text, pipeline)
            outputs = runner.parse_memrefs(runner.run_module(lowered))
        except runner.ToolError as e:
            print(f"error: [{name}] {e}", file=sys.stderr)
            return 1
        if len(outputs) != len(cases):
            print(f"error: [{name}] {len(outputs)} results for {len(cases)} "
                  f"cases", file=sys.stderr)
            return 1
        for i, ((cfg, inputs), out, ref) in enumerate(
                zip(cases, outputs, refs)):
            result = compare(
                cfg, out, ref, inputs,
                None if args.pipeline else path_key_block(name),
                not args.pipeline and runs_on_matrix_units(
                    name, args.matrix_units, cfg),
                1 if args.pipeline else path_splits(name, args.kv_splits,
                                                    cfg))
            total += 1
            failed += not result.ok
            print(f"{'PASS' if result.ok else 'FAIL'} [{name}] case{i} "
                  f"{cfg.describe()} {accuracy.describe(result)}")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
