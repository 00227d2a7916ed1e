"""The device check in one window: `scripts/device-check window [OUT]`.

A device is lent for a short window (one call of at most 10 minutes), so
this runs the most informative checks first, within a deadline counted from
its start (default 470 s, under 8 minutes with the interpreter's start):

  1. nvidia-smi: the GPU and driver;
  2. the wgmma (sm_90a) kernel's correctness on a few cases (the Qwen3-Next
     shape, D 128 and 256 causal or not, ragged Sq != Skv, Sq = 1);
  3. the headline benchmark, wgmma kernel: Qwen3-Next (Hq 16 / Hkv 2,
     D 256, causal) and D 128 (causal and not) at 16k tokens, against torch
     SDPA + a separate gate (and SDPA alone) in the same run;
  4. the same shapes with the mma.sync kernel;
  5. the persistent wgmma kernel (persistent=1): checked on a few cases
     (on the device's SM count and on 3 CTAs), then timed against the
     one-tile kernel on the headline shapes in the same run;
  6. the torch op's test, then the torch op against SDPA + gate;
  7. the dense op's decode steps (split-KV), the paged kernels' test;
  8. the torch op's backward: its test (numerics against float64 within
     the error model, bitwise reproducibility), then forward + backward
     against SDPA + gate under autograd (bench/gpu_backward.py: D 128 and
     Qwen3-Next, S 1k to 16k; its CSV row by row);
  9. compute-sanitizer (memcheck, synccheck) on the wgmma kernel, last.

Each step has a budget (its timeout, an estimate of its worst case): a step
whose budget exceeds the time left is skipped, and logged as skipped, as
are the later steps on the wgmma kernel when its correctness step timed
out (a hang). Each
step's output is appended to OUT/device-window-DATE.log line by line, and
its outcome (passed, failed, timeout, skipped) to
OUT/device-window-DATE.csv once it ends; the benchmarks write their own
CSVs row by row. A run killed from outside keeps every finished step.

  python3 bench/gpu_window.py [OUT] [--deadline S] [--list]
      [--only STEP,...]
  python3 bench/gpu_window.py OUT --dry-run [--scale F]
      [--stand-in STEP=SECONDS[:RC] ...]

--list prints the plan. --dry-run runs the same orchestration with stand-in
steps (a shell per step that prints its command and sleeps for the step's
estimate; --stand-in sets a step's sleep in seconds of real time and
its exit status); --scale multiplies deadline, budgets and estimates (0.01
by default in a dry run) so that a dry run takes seconds. Exit status 1 when
a step failed or timed out, else 0.
"""

import argparse
import csv
import datetime
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(
    os.path.abspath(__file__)), ".."))
KERNELS = "build/device-check"
TORCH_KERNELS = "build/device-check/torch-kernels"
# Correctness of the wgmma kernel: cases of bench/gpu_attention.py's list.
CHECK_CASES = (r"hq=16,hkv=2,sq=513|sq=200,skv=200,d=(128|256),.*"
               r"gw=elementwise,dtype=bf16|sq=(77|300),|sq=1,skv=17,")
# The headline shapes: Qwen3-Next causal and D 128, at 16k tokens.
HEADLINE = (r"b=1,hq=16,hkv=2,sq=16384,.*causal=1|"
            r"b=1,hq=16,hkv=16,sq=16384,skv=16384,d=128,")
RAGGED = r"sq=(77|300|1),"
# The persistent kernel's checks: ragged tiles, and Qwen3-Next's 80 tiles.
PERSISTENT_CHECK = r"sq=(77|300),|hq=16,hkv=2,sq=513"


class Step:
    def __init__(self, name, argv, budget, estimate, what, env=None,
                 hangs_with=None):
        self.name, self.argv, self.budget = name, argv, budget
        self.estimate, self.what, self.env = estimate, what, env or {}
        # A step that timed out (a hang: an mbarrier phase bug shows as
        # one) makes this one skipped: it would hang the same way.
        self.hangs_with = hangs_with


def plan(out, sanitizer):
    """The steps in order. Budgets are timeouts (seconds, imports
    included); estimates are typical times, used by the dry run."""
    py = "python3"
    attention = [py, "bench/gpu_attention.py", "run", KERNELS, "--out", out]
    cache = {"GATED_ATTENTION_CACHE_DIR": TORCH_KERNELS}
    package = dict(cache, PYTHONPATH="python")
    steps = [
        Step("gpu", ["nvidia-smi", "--query-gpu=name,driver_version",
                     "--format=csv,noheader"], 10, 2, "the GPU and driver"),
        Step("wgmma-check", attention + [
            "--kernel", "wgmma", "--no-bench", "--match", CHECK_CASES], 75,
            45, "wgmma kernel against float64 on 11 cases"),
        Step("wgmma-bench", attention + [
            "--kernel", "wgmma", "--no-check", "--bench-match", HEADLINE,
            "--tag=-window"], 75, 50,
            "headline shapes, wgmma kernel, against SDPA + gate",
            hangs_with="wgmma-check"),
        Step("mma-sync-bench", attention + [
            "--kernel", "mma-sync", "--no-check", "--bench-match", HEADLINE,
            "--tag=-window"], 60, 40,
            "headline shapes, mma.sync kernel, against SDPA + gate"),
        Step("persistent-bench", attention + [
            "--kernel", "wgmma-persistent", "--match", PERSISTENT_CHECK,
            "--bench-match", HEADLINE, "--tag=-window"], 60, 35,
            "persistent wgmma kernel: checked, then against the one-tile "
            "kernel on the headline shapes", hangs_with="wgmma-check"),
        Step("torch-op", [py, "test/Integration/GPU/torch-op.py"], 40, 25,
             "the torch op: numerics, strided views, CUDA graphs", package),
        Step("torch-op-bench", [py, "bench/gpu_torch_op.py", "run", "--out",
                                out], 40, 25,
             "the torch op against SDPA + gate", cache),
        Step("decode", [py, "test/Integration/GPU/decode.py"], 30, 15,
             "dense decode steps (split-KV)", package),
        Step("paged", [py, "test/Integration/GPU/paged.py"], 90, 50,
             "the paged kernels' test", package),
        Step("torch-backward", [py, "test/Integration/GPU/torch-backward.py"],
             30, 15, "the torch op's backward: numerics, reproducibility",
             package),
        Step("backward-bench", [py, "bench/gpu_backward.py", "run", "--out",
                                out], 60, 35,
             "the torch op's forward + backward against SDPA + gate, and "
             "its backward kernel by kernel", cache),
        Step("backward-stages", [py, "bench/gpu_backward_stages.py", "run"],
             70, 30, "which sm_90a backward kernel hangs at D 256 (one "
             "stage more per process, each under a timeout)", cache),
    ]
    for tool in ("memcheck", "synccheck"):
        steps.append(Step(
            f"sanitizer-{tool}",
            [sanitizer or "compute-sanitizer", "--tool", tool,
             "--error-exitcode", "3"] + attention[:4] + [
                "--no-bench", "--kernel", "wgmma", "--match", RAGGED,
                "--out", out], 35, 25,
            f"compute-sanitizer {tool}, wgmma kernel, ragged cases",
            hangs_with="wgmma-check"))
    return steps


def check_args(steps):
    """Each step that runs a bench/ script, with --help appended: its
    parser reads the step's arguments first and exits 0 only if they parse
    (a dry run's stand-ins never parse them; "--tag -window" once failed
    on the device)."""
    bad = 0
    for s in steps:
        if s.argv[0] != "python3" or not s.argv[1].startswith("bench/"):
            continue
        proc = subprocess.run([sys.executable] + s.argv[1:] + ["--help"],
                              cwd=ROOT, capture_output=True, text=True)
        ok = proc.returncode == 0
        bad += not ok
        print(f"{s.name}: {'arguments parse' if ok else 'BAD ARGUMENTS'}")
        if not ok:
            print(proc.stderr.strip().splitlines()[-1])
    return 1 if bad else 0


def find_sanitizer():
    return shutil.which("compute-sanitizer") or next(
        (p for p in ["/usr/local/cuda/bin/compute-sanitizer"]
         if os.access(p, os.X_OK)), None)


def stand_in(step, seconds, rc):
    """A shell that prints the step's command, sleeps and exits with rc."""
    quoted = " ".join(step.argv).replace("'", "")
    return ["/bin/sh", "-c",
            f"echo 'stand-in for {step.name}: {quoted}'; sleep {seconds:.3f}; "
            f"echo 'stand-in for {step.name} done'; exit {rc}"]


def run_step(argv, env, timeout, log):
    """Runs argv in its own process group, copying its output to stdout
    and the log line by line; (status, exit code)."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)

    def pump():
        for line in iter(proc.stdout.readline, b""):
            text = line.decode(errors="replace")
            sys.stdout.write(text)
            sys.stdout.flush()
            log.write(text)
            log.flush()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(5)
        return "timeout", None
    reader.join(5)
    return ("passed" if rc == 0 else "failed"), rc


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", default="bench/results")
    p.add_argument("--deadline", type=float, default=470.0,
                   help="seconds from the start (default 470)")
    p.add_argument("--list", action="store_true", help="print the plan")
    p.add_argument("--check-args", action="store_true",
                   help="parse each benchmark step's arguments with its "
                   "script's own parser (its --help), running nothing")
    p.add_argument("--dry-run", action="store_true",
                   help="stand-in steps, no GPU needed")
    p.add_argument("--scale", type=float,
                   help="times deadline, budgets and estimates (dry run: "
                   "0.01)")
    p.add_argument("--stand-in", action="append", default=[],
                   metavar="STEP=SECONDS[:RC]")
    p.add_argument("--only", metavar="STEP,...",
                   help="run these steps only, in the plan's order (a "
                   "second window that reruns what the first could not "
                   "finish)")
    args = p.parse_args(argv)
    start = time.monotonic()
    scale = args.scale if args.scale is not None else (
        0.01 if args.dry_run else 1.0)
    out = args.out
    sanitizer = find_sanitizer()
    steps = plan(out, sanitizer)
    names = [s.name for s in steps]
    overrides = {}
    for spec in args.stand_in:
        name, _, value = spec.partition("=")
        if name not in names:
            p.error(f"--stand-in: no step {name!r} (steps: "
                    f"{', '.join(names)})")
        seconds, _, rc = value.partition(":")
        overrides[name] = (float(seconds), int(rc or 0))
    if args.only:
        wanted = args.only.split(",")
        unknown = [n for n in wanted if n not in names]
        if unknown:
            p.error(f"--only: no step {', '.join(map(repr, unknown))} "
                    f"(steps: {', '.join(names)})")
        steps = [s for s in steps if s.name in wanted]
    if args.list:
        total = 0
        for s in steps:
            total += s.budget
            print(f"{s.name:16} budget {s.budget:4d} s  estimate "
                  f"{s.estimate:3d} s  {s.what}")
            print(f"{'':16} {' '.join(s.argv)}")
        print(f"budgets {total} s, deadline {args.deadline:g} s")
        return 0
    if args.check_args:
        return check_args(steps)

    os.makedirs(os.path.join(ROOT, out), exist_ok=True)
    date = datetime.date.today().isoformat()
    log_path = os.path.join(ROOT, out, f"device-window-{date}.log")
    csv_path = os.path.join(ROOT, out, f"device-window-{date}.csv")
    new_csv = not os.path.exists(csv_path)
    deadline = args.deadline * scale
    bad = skipped = 0
    with open(log_path, "a") as log, open(csv_path, "a", newline="") as cf:
        table = csv.writer(cf)
        if new_csv:
            table.writerow(["started", "step", "status", "exit", "seconds",
                            "budget", "dry_run", "note"])
            cf.flush()
        started = datetime.datetime.now().isoformat(timespec="seconds")
        log.write(f"== device-check window {started}, deadline "
                  f"{args.deadline:g} s{' (dry run)' if args.dry_run else ''}"
                  "\n")
        log.flush()

        def record(step, status, rc, seconds, note=""):
            table.writerow([started, step.name, status,
                            "" if rc is None else rc,
                            f"{seconds / scale:.1f}", step.budget,
                            int(args.dry_run), note])
            cf.flush()
            line = (f"== {step.name}: {status}"
                    f"{'' if rc is None else f' (exit {rc})'}, "
                    f"{seconds / scale:.1f} s of {step.budget} s"
                    f"{f' ({note})' if note else ''}\n")
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
            log.flush()

        outcome = {}
        for step in steps:
            if outcome.get(step.hangs_with) == "timeout":
                skipped += 1
                record(step, "skipped", None, 0.0,
                       f"{step.hangs_with} timed out")
                continue
            left = deadline - (time.monotonic() - start)
            budget = step.budget * scale
            if budget > left:
                skipped += 1
                record(step, "skipped", None, 0.0,
                       f"needs {step.budget} s, {max(left, 0) / scale:.0f} s "
                       "left")
                continue
            is_sanitizer = step.name.startswith("sanitizer-")
            if is_sanitizer and not sanitizer and not args.dry_run:
                skipped += 1
                record(step, "skipped", None, 0.0, "no compute-sanitizer")
                continue
            header = f"== {step.name}: {step.what}\n"
            sys.stdout.write(header)
            sys.stdout.flush()
            log.write(header)
            log.flush()
            env = dict(os.environ, **step.env)
            cmd = step.argv
            if args.dry_run:
                seconds, rc = overrides.get(step.name,
                                            (step.estimate * scale, 0))
                cmd = stand_in(step, seconds, rc)
            t0 = time.monotonic()
            status, rc = run_step(cmd, env, budget, log)
            outcome[step.name] = status
            bad += status != "passed"
            record(step, status, rc, time.monotonic() - t0)
        total = (time.monotonic() - start) / scale
        summary = (f"== window done in {total:.1f} s: "
                   f"{len(steps) - bad - skipped} passed, {bad} failed or "
                   f"timed out, {skipped} skipped\n")
        sys.stdout.write(summary)
        log.write(summary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
