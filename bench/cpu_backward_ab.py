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
        [--rounds 4] [--calls 8] [--threads 2] [--dtype bf16]
        [--before-opt PATH [--before-env NAME=VALUE] [--after-opt PATH]]

With --before-opt the two libraries are two builds instead: the pipeline
as it is, compiled by that gated-attention-opt ("before"; --before-env sets
a variable while it compiles, a build's temporary switch) and by
--after-opt or this build's ("after"); --dtype f32 compares the f32
backward. Needs gcc (for the driver). Prints one line per run (with the
driver's fresh-page faults per call) and a summary, and writes a CSV to
bench/results/.
"""

import argparse
import datetime
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
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f32"))
    parser.add_argument("--before-opt")
    parser.add_argument("--before-env")
    parser.add_argument("--after-opt")
    args = parser.parse_args()

    # B, Sq and Skv run-time sizes, as the torch op compiles it.
    cfg = config.AttentionConfig(b=1, hq=8, hkv=8, sq=1, skv=1, d=128,
                                 dv=128, gate="sigmoid", dtype=args.dtype,
                                 dynamic=("b", "sq", "skv"))
    text = ("module {\n" + mlir.backward_function(
        cfg, "attention_backward", lse=True) + "}\n")
    if args.before_opt:
        builds = {"before": ("--gated-attention-to-llvm", args.before_opt,
                             args.before_env),
                  "after": ("--gated-attention-to-llvm", args.after_opt,
                            None)}
        print(f"before: {args.before_opt}"
              f"{' with ' + args.before_env if args.before_env else ''}; "
              f"after: {args.after_opt or runner.opt_path()}")
    else:
        before, after, units = pipelines(text)
        builds = {"before": (f"--pass-pipeline={before}", None, None),
                  "after": (f"--pass-pipeline={after}", None, None)}
        print(f"tile-backward matrix-units: before fma, after {units}")
    with tempfile.TemporaryDirectory(prefix="ga-backward-ab-") as tmp:
        driver = os.path.join(tmp, "driver")
        subprocess.run(["gcc", "-O2", "-o", driver,
                        os.path.join(HERE, "cpu_backward_driver.c"), "-ldl",
                        "-lm"], check=True)
        libs = {}
        for name, (pipeline, opt, env) in builds.items():
            saved = dict(os.environ)
            if env:
                key, _, value = env.partition("=")
                os.environ[key] = value
            try:
                lib = native.SharedLibrary(text, (pipeline,), openmp=True,
                                           opt=opt)
            finally:
                os.environ.clear()
                os.environ.update(saved)
            libs[name] = os.path.join(tmp, f"{name}.so")
            shutil.copy(lib.path, libs[name])
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        times, rows = {}, []
        element_bytes = "2" if args.dtype == "bf16" else "4"
        for s in (int(x) for x in args.sizes.split(",")):
            for _ in range(args.rounds):
                for name in ("before", "after"):
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    out = subprocess.run(
                        [driver, libs[name], element_bytes, str(s),
                         str(args.calls)],
                        env=env, capture_output=True, text=True,
                        check=True).stdout
                    best = float(out.split()[1])
                    faults = out.split()[-1]
                    times.setdefault((s, name), []).append(best)
                    rows.append(f"{args.dtype},{s},{name},{load},{best:.4f},"
                                f"{faults}")
                    print(f"S {s} {name:6} load {load} best {best:.4f} s "
                          f"faults/call {faults}")
        for s in sorted({s for s, _ in times}):
            b, a = times[(s, "before")], times[(s, "after")]
            print(f"S {s}: before {min(b):.4f}-{max(b):.4f} s, after "
                  f"{min(a):.4f}-{max(a):.4f} s, before / after (medians) "
                  f"{statistics.median(b) / statistics.median(a):.2f}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y%m%dT%H%M%SZ")
    path = os.path.join(HERE, "results", f"cpu_backward_ab-{stamp}.csv")
    with open(path, "w") as f:
        f.write("dtype,s,build,load,best_s,faults_per_call\n" +
                "\n".join(rows) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
