"""The CPU forward compiled several ways, timed alternately in one process:
the Qwen3-Next shape (Hq 16 over Hkv 2, D 256, causal, f32 by default;
--shape mha: H 8, D 128, not causal)
through --gated-attention-to-llvm with each variant's options (and,
optionally, its own gated-attention-opt, e.g. a copy built before a
change), then rounds in which every variant runs --calls calls in turn;
a variant's figure is its best call over all rounds. --dynamic compiles
the torch op's kind of function (B, Sq and Skv dynamic). Alternating keeps
the variants under the same load on a shared machine; the ratios are the
result, the GFLOP/s only as good as the load average printed with them.

    .venv/bin/python bench/cpu_attention_ab.py [--sizes 1024,2048]
        [--variant NAME=OPTIONS[@OPT] ...] [--rounds 4] [--calls 3]
        [--dtype f32] [--shape qwen3next] [--dynamic] [--csv PATH]

OPTIONS are the pipeline's (e.g. `key-block=128 register-rows=4`, empty
for the defaults), or a pass's inside it, named PASS.OPTION (e.g.
`gated-attention-vectorize-tiles.register-depth=64`: the pipeline is then
run as the --pass-pipeline it dumps, with that option changed), or -PASS,
the pipeline without that pass (e.g. `-gated-attention-tiles-to-openmp`:
upstream's static OpenMP schedule); OPT a
gated-attention-opt binary. Without --variant:
`base=` alone. GFLOP/s count the causal half; each variant's output is
checked against the first's.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from gated_attention import config, mlir, native, runner  # noqa: E402
import cpu_attention  # noqa: E402
import fma_peak  # noqa: E402


SHAPES = {
    "qwen3next": dict(causal=True, **cpu_attention.QWEN),
    "mha": dict(causal=False, hq=cpu_attention.H, hkv=cpu_attention.H,
                d=cpu_attention.D),
    # The same causal: one head per tile, so a tile's diagonal spans its
    # query block (Qwen3-Next's stacks 8 heads of a fraction of it).
    "mha-causal": dict(causal=True, hq=cpu_attention.H, hkv=cpu_attention.H,
                       d=cpu_attention.D),
    # One tensor-parallel rank of Qwen3-Next's attention at TP 2: one KV
    # head, so a batch of one is a single causal grid of query blocks.
    "qwen3next-tp2": dict(causal=True, hq=cpu_attention.QWEN["hq"] // 2,
                          hkv=cpu_attention.QWEN["hkv"] // 2,
                          d=cpu_attention.QWEN["d"]),
}


def parse_variant(text):
    name, _, rest = text.partition("=")
    options, _, opt = rest.partition("@")
    return name, options.strip(), opt or None


def pass_pipeline(text, flag, overrides, opt, removed=()):
    """The --pass-pipeline that `flag` runs on `text`, with each
    (pass, option, value) of `overrides` set in it and the passes named in
    `removed` taken out."""
    proc = subprocess.run(
        runner.opt_command(flag, "--dump-pass-pipeline", "-o", "/dev/null",
                           opt=opt),
        input=text, capture_output=True, text=True, check=True)
    pipeline = "".join(
        line.strip() for line in proc.stderr.split("passes:", 1)[1].splitlines())
    for name, option, value in overrides:
        pattern = re.escape(name) + r"\{[^}]*\}"
        if not re.search(pattern, pipeline):
            sys.exit(f"no pass {name} with options in the pipeline")

        def change(m):
            body = m.group(0)
            if re.search(rf"\b{re.escape(option)}=", body):
                return re.sub(rf"\b({re.escape(option)}=)[^ }}]*",
                              rf"\g<1>{value}", body)
            return body[:-1] + f" {option}={value}}}"
        pipeline = re.sub(pattern, change, pipeline)
    for name in removed:
        pattern = r"(?<=[(,])" + re.escape(name) + r"(\{[^}]*\})?(,|(?=\)))"
        if not re.search(pattern, pipeline):
            sys.exit(f"no pass {name} in the pipeline")
        pipeline = re.sub(pattern, "", pipeline)
    return pipeline


def compile_variant(cfg, options, opt):
    text = mlir.destination_function(cfg, "attn")
    removed = [w[1:] for w in options.split() if w.startswith("-")]
    words = [w for w in options.split() if not w.startswith("-")]
    overrides = [(w.split("=", 1)[0].rsplit(".", 1)[0],
                  w.split("=", 1)[0].rsplit(".", 1)[1], w.split("=", 1)[1])
                 for w in words if "." in w.split("=", 1)[0]]
    plain = [w for w in words if "." not in w.split("=", 1)[0]]
    flag = "--gated-attention-to-llvm" + (
        "=" + " ".join(plain) if plain else "")
    # The dumped --pass-pipeline no longer names target-cpu: llc is told.
    cpu = native.target_cpu([flag])
    if overrides or removed:
        flag = "--pass-pipeline=" + pass_pipeline(text, flag, overrides, opt,
                                                  removed)
    return native.SharedLibrary(text, [flag], openmp=True, opt=opt, cpu=cpu)


def inputs(cfg, dtype):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(cfg.shapes()[o]).astype(dtype)
            for o in mlir.OPERANDS]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048")
    p.add_argument("--variant", action="append", default=[],
                   help="NAME=OPTIONS[@OPT] (repeatable)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
    p.add_argument("--shape", default="qwen3next", choices=tuple(SHAPES),
                   help="qwen3next: Hq 16, Hkv 2, D 256, causal; mha: "
                   "H 8, D 128, not causal (bench/cpu_attention.py's "
                   "tables); mha-causal: the same, causal")
    p.add_argument("--dynamic", action="store_true",
                   help="B, Sq and Skv dynamic, as the torch op's functions")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--csv", help="append one row per (S, variant) here")
    args = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[:args.threads]
    os.sched_setaffinity(0, cpus)
    os.environ["OMP_NUM_THREADS"] = str(len(cpus))
    variants = [parse_variant(v) for v in args.variant] or [("base", "", None)]
    if args.dtype == "bf16":
        import ml_dtypes
        dtype = ml_dtypes.bfloat16
    else:
        dtype = np.float32
    # The f32 FMA peak is the f32 kernel's yardstick (bf16 multiplies on
    # other units).
    peak = (fma_peak.best(fma_peak.peak(len(cpus)))
            if fma_peak.widths() and args.dtype == "f32" else None)
    print(f"# {cpu_attention.cpu_name()}, {len(cpus)} threads" +
          (f", f32 FMA peak {peak:.1f} GFLOP/s" if peak else ""))
    rows = []
    for s in (int(x) for x in args.sizes.split(",") if x):
        shape = SHAPES[args.shape]
        cfg = config.AttentionConfig(
            b=1, sq=s, skv=s, dtype=args.dtype, dv=shape["d"],
            dynamic=("b", "sq", "skv") if args.dynamic else (), **shape)
        flops = cpu_attention.useful_flops(cfg)
        x = inputs(cfg, dtype)
        libs = [compile_variant(cfg, o, opt) for _, o, opt in variants]
        outs = [cpu_attention.run_attention(lib, cfg, x, dtype)
                for lib in libs]
        for (name, _, _), out in zip(variants, outs):
            err = float(np.max(np.abs(out.astype(np.float64) -
                                      outs[0].astype(np.float64))))
            if err > (1e-3 if args.dtype == "f32" else 5e-2):
                sys.exit(f"{name} differs from {variants[0][0]} by {err:g}")
        best = [float("inf")] * len(libs)
        loads = []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            for i, lib in enumerate(libs):
                for _ in range(args.calls):
                    t = time.perf_counter()
                    cpu_attention.run_attention(lib, cfg, x, dtype)
                    best[i] = min(best[i], time.perf_counter() - t)
        print(f"S {s}: load average {min(loads):.2f}-{max(loads):.2f}")
        for (name, options, opt), t in zip(variants, best):
            g = flops / t / 1e9
            frac = f", {g / peak:.0%} of peak" if peak else ""
            print(f"  {name:>12}: {t * 1e3:8.2f} ms {g:7.1f} GFLOP/s "
                  f"{best[0] / t:5.3f}x {variants[0][0]}{frac}  [{options}"
                  f"{'@' + opt if opt else ''}]", flush=True)
            rows.append((s, len(cpus), name, options + (f"@{opt}" if opt
                                                         else ""),
                         t, g, best[0] / t, peak, g / peak if peak else None,
                         min(loads), max(loads), args.shape, args.dtype))
    if args.csv:
        new = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if new:
                f.write(f"# {cpu_attention.cpu_name()}\n"
                        "S,threads,variant,options,seconds,gflops,over_first,"
                        "fma_peak_gflops,of_fma_peak,load_min,load_max,shape,"
                        "dtype\n")
            f.write(f"# {' '.join(sys.argv)}\n")
            for r in rows:
                f.write(",".join(cpu_attention.csv_cell(c) for c in r) + "\n")


if __name__ == "__main__":
    main()
