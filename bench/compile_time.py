"""Compile time of a Qwen3-Next-like model graph through the PTX pipeline.

    /usr/bin/python3 bench/compile_time.py [--layers 12,24,48] [--repeat 3]

Builds a stack of `layers` layers (every 4th the gated-attention block of
examples/qwen3_next, the others a SwiGLU MLP standing in for the linear-
attention layers; bf16, B = 1, S = 64, weights as arguments), inlines it into
one function as a frontend would export it, and times
`gated-attention-opt --inline --gated-attention-to-ptx` (wall time, best of
`repeat`, PTX for sm_90 with libdevice linked). Prints a table and writes
bench/results/compile-time-<date>.csv.

    .venv/bin/python bench/compile_time.py --cpu [--repeat 3]
        [--matrix-units fma,avx512-bf16] [--opt PATH]

times instead what the torch op compiles on its first call on the CPU: the
function of Qwen3-Next's attention shape (Hq 16, Hkv 2, D 256, causal,
sigmoid gate; B, Sq, Skv dynamic, and a static B 1, S 1024 beside it) in
bf16 under each `matrix-units` and in f32, stage by stage as
native.SharedLibrary runs them: gated-attention-opt --gated-attention-to-llvm,
mlir-translate, llc -O3 -mcpu=native, the link (best of `repeat` each),
with the size of the LLVM IR and of the object. Writes
bench/results/compile-time-cpu-<date>.csv.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from gated_attention.models import qwen3_next  # noqa: E402


def _cpu_rows(args):
    """(function, units, stage seconds..., IR lines, object instructions)
    of the torch op's CPU functions (see the module's docstring)."""
    from gated_attention import config, mlir, native
    rows = []
    for dtype, dynamic in (("bf16", True), ("bf16", False), ("f32", True)):
        cfg = config.AttentionConfig(
            b=1, hq=16, hkv=2, sq=1024, skv=1024, d=256, dv=256,
            causal=True, gate="sigmoid", dtype=dtype,
            dynamic=("b", "sq", "skv") if dynamic else ())
        text = ("module {\n" + mlir.destination_function(cfg, "attention")
                + "}\n")
        units_list = args.matrix_units.split(",") if dtype == "bf16" \
            else ["fma"]
        for units in units_list:
            pipeline = f"--gated-attention-to-llvm=matrix-units={units}"
            stages = [float("inf")] * 4
            for _ in range(args.repeat):
                lib = native.SharedLibrary(text, (pipeline,), openmp=True,
                                           opt=args.opt)
                stages = [min(a, b) for a, b in
                          zip(stages, lib.seconds.values())]
            with open(lib.ir_path) as f:
                ir_lines = sum(1 for _ in f)
            asm = native._run(["objdump", "-d", "--no-show-raw-insn",
                               lib.object_path])
            instructions = sum(1 for line in asm.splitlines()
                               if line.startswith(" "))
            name = f"{dtype} {'dynamic' if dynamic else 'static'}"
            rows.append((name, units, *stages, ir_lines, instructions))
            print(f"{name:13s} {units:12s} opt {stages[0]:5.2f} s  "
                  f"translate {stages[1]:4.2f} s  llc {stages[2]:5.2f} s  "
                  f"link {stages[3]:4.2f} s  total {sum(stages):5.2f} s  "
                  f"{ir_lines} IR lines, {instructions} instructions",
                  flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", default="12,24,48")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--opt", default=os.path.join(ROOT, "build", "bin",
                                                 "gated-attention-opt"))
    p.add_argument("--out", default=os.path.normpath(
        os.path.join(ROOT, "bench", "results")))
    p.add_argument("--cpu", action="store_true",
                   help="time the torch op's CPU functions instead")
    p.add_argument("--matrix-units", default="fma,avx512-bf16",
                   help="--cpu: the bf16 functions' matrix-units values")
    args = p.parse_args(argv)
    if args.cpu:
        rows = _cpu_rows(args)
        os.makedirs(args.out, exist_ok=True)
        date = datetime.date.today().isoformat()
        path = os.path.join(args.out, f"compile-time-cpu-{date}.csv")
        with open(path, "w") as f:
            f.write("date,function,matrix_units,opt_s,translate_s,llc_s,"
                    "link_s,total_s,ir_lines,instructions\n")
            for name, units, *stages, ir_lines, ins in rows:
                f.write(f"{date},{name},{units},"
                        + ",".join(f"{x:.3f}" for x in stages)
                        + f",{sum(stages):.3f},{ir_lines},{ins}\n")
        print(f"wrote {path}")
        return 0
    env = dict(os.environ)
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (int(n) for n in args.layers.split(",")):
            src = os.path.join(tmp, f"model{layers}.mlir")
            with open(src, "w") as f:
                f.write(qwen3_next.model(layers))
            best, out = float("inf"), ""
            for _ in range(args.repeat):
                start = time.perf_counter()
                out = subprocess.run(
                    [args.opt, src, "--inline", "--gated-attention-to-ptx"],
                    check=True, capture_output=True, text=True, env=env).stdout
                best = min(best, time.perf_counter() - start)
            launches = len(re.findall(r"gpu\.launch_func", out))
            kernels = len(re.findall(r"gpu\.binary @", out))
            rows.append((layers, best, launches, kernels))
            print(f"{layers:3d} layers: {best:6.2f} s  ({launches} launches, "
                  f"{kernels} distinct kernels)", flush=True)
    os.makedirs(args.out, exist_ok=True)
    date = datetime.date.today().isoformat()
    path = os.path.join(args.out, f"compile-time-{date}.csv")
    with open(path, "w") as f:
        f.write("date,layers,seconds,launches,kernels\n")
        for layers, sec, launches, kernels in rows:
            f.write(f"{date},{layers},{sec:.3f},{launches},{kernels}\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
