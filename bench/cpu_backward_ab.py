"""The CPU backward alone, with and without its bf16 pair products, timed
alternately: the backward of bench/cpu_backward_driver.c's configuration
(gated sigmoid, combine mul, reading the forward's log-sum-exp; B 1,
Hq = Hkv = 8, D 128) compiled twice by --gated-attention-to-llvm's pipeline
(matrix-units=host), "before" with gated-attention-tile-backward's
matrix-units=fma (f32 operands but for Sᵀ = K Qᵀ's bf16 Q) and "after" with
the pipeline as it is (avx512-bf16 where this CPU has it: the five
products on bf16 pairs), then both run by the C driver in turns, each turn
the best of --calls calls, with the load average before each turn.

    .venv/bin/python bench/cpu_backward_ab.py [--sizes 512,1024]
        [--rounds 4] [--calls 8] [--threads 2]

Needs gcc (for the driver). Prints one line per run and a summary.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from gated_attention import config, mlir, native, runner  # noqa: E402

TILE_BACKWARD = r"(gated-attention-tile-backward\{[^}]*matrix-units=)[a-z0-9-]+"


def pipelines(text):
    """(before, after) --pass-pipeline texts of --gated-attention-to-llvm
    for `text`: after as the pipeline is, before with tile-backward's
    matrix-units=fma."""
    proc = subprocess.run(
        runner.opt_command("--gated-attention-to-llvm",
                           "--dump-pass-pipeline", "-o", "/dev/null"),
        input=text, capture_output=True, text=True, check=True)
    dump = proc.stderr.split("passes:", 1)[1]
    after = "".join(line.strip() for line in dump.splitlines())
    before = re.sub(TILE_BACKWARD, r"\1fma", after)
    units = re.search(TILE_BACKWARD.replace("[a-z0-9-]+", "([a-z0-9-]+)"),
                      after).group(2)
    return before, after, units


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="512,1024")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    # B, Sq and Skv run-time sizes, as the torch op compiles it.
    cfg = config.AttentionConfig(b=1, hq=8, hkv=8, sq=1, skv=1, d=128,
                                 dv=128, gate="sigmoid", dtype="bf16",
                                 dynamic=("b", "sq", "skv"))
    text = ("module {\n" + mlir.backward_function(
        cfg, "attention_backward", lse=True) + "}\n")
    before, after, units = pipelines(text)
    print(f"tile-backward matrix-units: before fma, after {units}")
    with tempfile.TemporaryDirectory(prefix="ga-backward-ab-") as tmp:
        driver = os.path.join(tmp, "driver")
        subprocess.run(["gcc", "-O2", "-o", driver,
                        os.path.join(HERE, "cpu_backward_driver.c"), "-ldl",
                        "-lm"], check=True)
        libs = {}
        for name, pipeline in (("before", before), ("after", after)):
            lib = native.SharedLibrary(text, (f"--pass-pipeline={pipeline}",),
                                       openmp=True)
            libs[name] = os.path.join(tmp, f"{name}.so")
            shutil.copy(lib.path, libs[name])
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        times = {}
        for s in (int(x) for x in args.sizes.split(",")):
            for _ in range(args.rounds):
                for name in ("before", "after"):
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    out = subprocess.run(
                        [driver, libs[name], "2", str(s), str(args.calls)],
                        env=env, capture_output=True, text=True,
                        check=True).stdout
                    best = float(out.split()[1])
                    times.setdefault((s, name), []).append(best)
                    print(f"S {s} {name:6} load {load} best {best:.4f} s")
        for s in sorted({s for s, _ in times}):
            b, a = times[(s, "before")], times[(s, "after")]
            print(f"S {s}: before {min(b):.4f}-{max(b):.4f} s, after "
                  f"{min(a):.4f}-{max(a):.4f} s, before / after (medians) "
                  f"{statistics.median(b) / statistics.median(a):.2f}")


if __name__ == "__main__":
    main()
