#!/usr/bin/env python3
"""Seeds, runs and triages the gated-attention-fuzz libFuzzer target.

    driver.py seeds OUT [--all-seeds]     write the seed corpus to OUT
    driver.py run FUZZER --seconds S [--jobs J] [--work DIR] [...]
    driver.py triage FUZZER ARTIFACT... [--out DIR] [--minimize]

`scripts/fuzz` is the usual entry point. An input is a header of
HEADER_SIZE bytes (the pipeline and its options, see
gated-attention-fuzz.cpp) followed by MLIR text. Seeds are the lit inputs
(split at `// -----`, comment lines dropped), the examples and the seeds/
directory beside this file, each with several pipelines.

A finding is any crash, sanitizer report, timeout or out-of-memory input,
or an abort of the target's own checks (output that does not parse back,
ops left unlowered, success after an error). Triage replays each one with
GATED_ATTENTION_FUZZ_VERBOSE=1, names it by its kind, message and the
first frame in the project's code, and writes per signature the input
(.bin), its MLIR (.mlir), the equivalent gated-attention-opt command and the
report. Crashes while merely parsing or verifying the input with no
project frame on the stack are upstream's and do not fail the run.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HEADER_SIZE = 5
# libFuzzer's exit status after SIGINT (fixed: LLVM 22's libFuzzer has no
# flag for it).
INTERRUPTED_EXIT = 72
ROOT = Path(__file__).resolve().parents[2]

# Byte 0: bits 0-2 the pipeline, bits 3-6 which options are given.
VERIFY, TO_LLVM, TO_LLVM_REF, TO_PTX_90, TO_PTX_80, RAISE, TILE, TO_NVGPU = \
    range(8)
PIPELINE_NAMES = ["verify", "to-llvm", "to-llvm-ref", "to-ptx-sm90",
                  "to-ptx-sm80", "raise", "tile", "to-nvgpu"]
# Indices into the target's kIntValues table.
INT_INDEX = {"1": 1, "4": 4, "8": 7, "16": 8, "32": 10, "64": 12, "128": 14}

SANITIZER_ENV = {
    "ASAN_OPTIONS": "allow_user_poisoning=0:detect_leaks=0:"
                    "allocator_may_return_null=0:"
                    "handle_abort=1:print_summary=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:print_summary=1",
    "ASAN_SYMBOLIZER_PATH": "/usr/lib/llvm-22/bin/llvm-symbolizer",
}


def header(kind, given=0, b1=0, b2=0, b3=0, b4=0, openmp0=False):
    return bytes([kind | (given << 3) | (128 if openmp0 else 0),
                  b1, b2, b3, b4])


def split_chunks(text):
    """`// -----`-separated chunks without comment lines."""
    chunks = []
    for chunk in re.split(r"^// -----.*$", text, flags=re.M):
        lines = [l for l in chunk.splitlines()
                 if not l.lstrip().startswith("//")]
        body = "\n".join(lines).strip()
        if body:
            chunks.append(body + "\n")
    return chunks


def split_functions(chunk, per_seed=2):
    """A chunk of independent top-level functions (no calls) as seeds of at
    most `per_seed` functions each, with the chunk's top-level aliases. Each
    attention op takes seconds through a pipeline under ASan: the fuzzer's
    mutants of a 6-function module ran 3 times slower than those of a pair,
    and a pair still exercises what functions share (a gpu.module per kernel
    configuration, deduplicated kernels)."""
    if re.search(r"\bcall\b|^module|^builtin.module", chunk, flags=re.M):
        return [chunk]
    prefix, funcs = [], []
    for line in chunk.splitlines(keepends=True):
        if line.startswith("func.func"):
            funcs.append([line])
        elif funcs:
            funcs[-1].append(line)
        else:
            prefix.append(line)
    if len(funcs) <= per_seed:
        return [chunk]
    groups = ["".join(line for f in funcs[i:i + per_seed] for line in f)
              for i in range(0, len(funcs), per_seed)]
    return ["".join(prefix) + g.strip() + "\n" for g in groups]


def seed_sources():
    files = sorted((ROOT / "test").rglob("*.mlir"))
    files += sorted((ROOT / "examples").rglob("*.mlir"))
    files += sorted((Path(__file__).parent / "seeds").glob("*.mlir"))
    for extra in os.environ.get("GATED_ATTENTION_FUZZ_SEEDS", "").split(":"):
        if extra and Path(extra).is_dir():
            files += sorted(Path(extra).glob("*.mlir"))
    return files


def write_seeds(out, small=True, per_chunk=2, rotation=0):
    """Every chunk with `per_chunk` (1 or 2) pipelines, round robin from
    `rotation`, and every fifth chunk one of the explicit option settings
    besides (small=False, --all-seeds: every chunk with every pipeline and
    option setting below). A run that can only replay its seeds (CI's)
    takes one pipeline a chunk; rotating it from run to run covers the
    others over successive runs."""
    if per_chunk not in (1, 2):
        raise ValueError(f"seed pipelines per chunk: 1 or 2, not {per_chunk}")
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    headers = [header(k) for k in range(8)]
    # Small blocks and explicit options (tile 8 x 4, PTX warps/key-block).
    headers += [
        header(TO_LLVM, 0b11, INT_INDEX["8"], INT_INDEX["4"]),
        header(TILE, 0b11, INT_INDEX["8"], INT_INDEX["4"]),
        header(TO_LLVM, 0, openmp0=True),
        header(TO_PTX_80, 0b011, INT_INDEX["4"], INT_INDEX["32"]),
        header(TO_NVGPU, 0b11, INT_INDEX["8"], INT_INDEX["64"]),
        header(TO_PTX_90, 0b100, 0, 0, INT_INDEX["64"]),
    ]
    n = 0
    index = 0
    for f in seed_sources():
        try:
            text = f.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        rel = f.relative_to(ROOT) if f.is_relative_to(ROOT) else f.name
        stem = re.sub(r"[^A-Za-z0-9]+", "_", str(rel))
        chunks = [f for c in split_chunks(text) for f in split_functions(c)]
        for c, chunk in enumerate(chunks):
            if small:
                turn = index + rotation
                chosen = [headers[turn % 8], headers[(turn + 3) % 8]]
                chosen = chosen[:per_chunk]
                if index % 5 == 0:
                    chosen.append(headers[8 + turn // 5 % (len(headers) - 8)])
                chosen = list(dict.fromkeys(chosen))
            else:
                chosen = headers
            index += 1
            for h in chosen:
                name = f"{stem}-{c}-{PIPELINE_NAMES[h[0] & 7]}-{h.hex()}"
                (out / name).write_bytes(h + chunk.encode())
                n += 1
    return n


STAT_RE = re.compile(r"^#(\d+):?\s+(?:cov|INITED|NEW|REDUCE|pulse|DONE|RELOAD)")


def parse_int_stat(log, name):
    m = re.findall(rf"stat::{name}:\s+(\d+)", log)
    return sum(int(x) for x in m) if m else None


def run_interruptible(cmd, env, log, cwd):
    """Runs the fuzzer to its end. A SIGINT or SIGTERM to the driver (Ctrl-C
    reaches both; `kill` only the driver) is passed on as SIGINT, on which
    libFuzzer prints its final stats and exits: the run is still counted.
    Returns (exit status, whether it was interrupted)."""
    proc = subprocess.Popen(cmd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=cwd)
    interrupted = []

    def forward(signum, frame):
        interrupted.append(signum)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)

    previous = {s: signal.signal(s, forward)
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        returncode = proc.wait()   # retried after each handler (PEP 475)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return returncode, bool(interrupted) or returncode == INTERRUPTED_EXIT


def run_fuzzer(args):
    work = Path(args.work).resolve()
    corpus = work / "corpus"
    seeds = work / "seeds"
    artifacts = work / "artifacts"
    for d in (corpus, artifacts):
        d.mkdir(parents=True, exist_ok=True)
    # The run and its triage use a copy: a rebuild during a long run would
    # otherwise triage its findings with other code (a crash the new code
    # no longer has would count as "not reproduced").
    snapshot = work / "gated-attention-fuzz"
    shutil.copy2(Path(args.fuzzer).resolve(), snapshot)
    args.fuzzer = str(snapshot)
    n = write_seeds(seeds, small=not args.all_seeds,
                    per_chunk=args.seed_pipelines, rotation=args.seed_rotation)
    print(f"fuzz: {n} seed inputs in {seeds}", flush=True)
    outcomes_path = work / "outcomes.jsonl"
    for old in [outcomes_path, *outcome_snapshots(outcomes_path)]:
        old.unlink(missing_ok=True)
    env = dict(os.environ, **SANITIZER_ENV,
               GATED_ATTENTION_FUZZ_STATS=str(outcomes_path))
    # The run only has to notice a report: triage replays each finding with
    # the full allocation and free stacks. Recording them on every malloc
    # costs ~8% of the run's time (libMLIR.so allocates a lot).
    env["ASAN_OPTIONS"] += ":malloc_context_size=0"
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    deadline = time.time() + args.seconds
    start = time.time()
    execs, rounds, failing, bad_exit = 0, 0, 0, False
    interrupted = False
    new_total = 0
    # One process (--jobs 1) stops at its first finding: it is triaged and
    # a new process goes on (the corpus kept) until the time is up. With
    # --jobs J > 1, libFuzzer's -fork=J processes go on by themselves.
    while True:
        left = int(deadline - time.time())
        if rounds and (left < 30 or args.jobs > 1):
            break
        rounds += 1
        before = set(artifacts.iterdir())
        cmd = [args.fuzzer, str(corpus), str(seeds),
               f"-max_total_time={max(left, 1)}",
               f"-timeout={args.timeout}",
               f"-rss_limit_mb={args.rss_limit_mb}",
               f"-max_len={args.max_len}", "-print_final_stats=1",
               "-detect_leaks=0", "-reload=0", "-mutate_depth=3",
               # Inputs take 1 ms to seconds (an op through the CPU
               # pipeline's unrolled tiles): mutate the fast ones more
               # often rather than spend most of the run on a few slow ones.
               "-entropic_scale_per_exec_time=1",
               f"-artifact_prefix={artifacts}/"]
        if args.jobs > 1:
            cmd += [f"-fork={args.jobs}", "-ignore_crashes=1",
                    "-ignore_timeouts=1", "-ignore_ooms=1"]
        log_path = work / ("fuzz.log" if rounds == 1 else f"fuzz-{rounds}.log")
        print("fuzz: " + " ".join(cmd), flush=True)
        with open(log_path, "w") as log:
            returncode, interrupted = run_interruptible(cmd, env, log, work)
        text = log_path.read_text(errors="replace")
        # Fork mode: the parent's status lines hold the total; one process:
        # stat::number_of_executed_units.
        n_execs = parse_int_stat(text, "number_of_executed_units")
        if args.jobs > 1:
            totals = [int(m.group(1)) for m in
                      re.finditer(r"^#(\d+): cov:", text, flags=re.M)]
            n_execs = max(totals) if totals else n_execs
        execs += n_execs or 0
        # slow-unit-* are inputs over -report_slow_units, not findings.
        new = sorted(a for a in set(artifacts.iterdir()) - before
                     if not a.name.startswith("slow-unit-"))
        new_total += len(new)
        print(f"fuzz: round {rounds}: {n_execs or 0} executions, "
              f"{len(new)} new artifacts, exit {returncode} "
              f"({log_path})", flush=True)
        failing += triage(args.fuzzer, new, work / "findings", args.timeout,
                          minimize=args.minimize)
        if interrupted:
            print("fuzz: interrupted; the executions so far are recorded")
            break
        if returncode != 0 and not new:
            print(f"fuzz: the fuzzer exited with {returncode} without "
                  f"a finding; see {log_path}")
            bad_exit = True
            break
    elapsed = time.time() - start
    summary = {"seconds": round(elapsed), "executions": execs,
               "exec_per_s": round(execs / max(elapsed, 1), 2),
               "rounds": rounds, "artifacts": new_total,
               "project_findings": failing, "work": str(work)}
    if interrupted:
        summary["interrupted"] = True
    summary["outcomes"] = summarize_outcomes(outcomes_path)
    print("fuzz: " + json.dumps(summary), flush=True)
    stats = work / "executions.jsonl"
    with open(stats, "a") as f:
        f.write(json.dumps(dict(summary, date=time.strftime("%F %T"))) + "\n")
    total = sum(json.loads(l).get("executions", 0)
                for l in stats.read_text().splitlines() if l.strip())
    print(f"fuzz: executions in all runs in {work}: {total}")
    if failing or bad_exit:
        return 1
    return 130 if interrupted else 0


def outcome_snapshots(path):
    """The per-process counts the target keeps beside `path` (PATH.<pid>)."""
    return [p for p in path.parent.glob(path.name + ".*")
            if p.suffix != ".tmp"]


def summarize_outcomes(path):
    """Per pipeline: inputs, and how many ran the pipeline / got through
    (summed over the target's processes; a process stopped by a signal
    counts up to its last snapshot, at most a minute old)."""
    totals = {}
    for snapshot in outcome_snapshots(path):
        for line in snapshot.read_text().splitlines():
            try:
                per = json.loads(line)
            except json.JSONDecodeError:
                continue
            for pipeline, stages in per.items():
                t = totals.setdefault(pipeline, {})
                for stage, n in stages.items():
                    t[stage] = t.get(stage, 0) + n
    out = {}
    for pipeline, stages in sorted(totals.items()):
        n = sum(stages.values())
        ran = sum(v for k, v in stages.items()
                  if k in ("run pipeline", "check output",
                           "translate output", "print output",
                           "parse back output", "done"))
        valid = n - sum(stages.get(k, 0) for k in ("skipped", "parse",
                                                   "verify"))
        out[pipeline] = {"inputs": n, "valid": valid,
                         "ran_pipeline": ran if pipeline != "verify" else None,
                         "succeeded": stages.get("done", 0)}
    return out


FRAME_RE = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.+?) (/\S+?)(?::(\d+))?(?::\d+)?\s*$")
RUNTIME_FRAMES = ("__sanitizer", "__asan", "__ubsan", "fuzzer::", "abort",
                  "raise", "__pthread_kill", "__libc", "_start", "main",
                  "llvm::report_fatal_error", "llvm::sys::", "exit",
                  "(anonymous namespace)::finding", "__cxa", "gsignal",
                  "llvm::reportFatal", "std::__terminate")


def project_frame(frame_file):
    try:
        rel = Path(frame_file).resolve().relative_to(ROOT)
    except ValueError:
        return False
    return not str(rel).startswith("tools/gated-attention-fuzz")


def replay(fuzzer, path, timeout):
    env = dict(os.environ, **SANITIZER_ENV, GATED_ATTENTION_FUZZ_VERBOSE="1")
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    try:
        p = subprocess.run([fuzzer, f"-timeout={timeout}", "-rss_limit_mb=4096",
                            "-detect_leaks=0", str(path)], env=env,
                           capture_output=True, text=True, errors="replace",
                           timeout=timeout * 2 + 30)
        return p.returncode, p.stderr + p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stderr or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return -1, out + "\nDRIVER: replay timed out"


def analyze(rc, log):
    """(signature, details) of a replayed input, or None if it passed."""
    if rc == 0:
        return None
    stages = re.findall(r"gated-attention-fuzz: stage: (.+)", log)
    pipeline = re.search(r"gated-attention-fuzz: pipeline: (.+)", log)
    kind, msg = "crash", ""
    patterns = [
        (r"FINDING: (.+)", "check"),
        (r"ERROR: AddressSanitizer: ([\w-]+)", "asan"),
        (r"runtime error: (.+)", "ubsan"),
        (r"LLVM ERROR: (.+)", "llvm-error"),
        (r"ERROR: libFuzzer: (timeout|out-of-memory|fuzz target exited)"
         r"[^\n]*", "libfuzzer"),
        (r"requested allocation size (.+)", "asan"),
        (r"ERROR: libFuzzer: deadly signal", "signal"),
        (r"DRIVER: replay timed out", "timeout"),
    ]
    for pat, k in patterns:
        m = re.search(pat, log)
        if m:
            kind = k
            msg = m.group(1) if m.groups() else m.group(0)
            break
    if kind == "libfuzzer" and msg.startswith("timeout"):
        kind = "timeout"
    if kind == "signal":
        sig = re.search(r"AddressSanitizer: (\w+) on unknown address", log)
        msg = sig.group(1) if sig else "deadly signal"
    frames = []
    for line in log.splitlines():
        m = FRAME_RE.match(line)
        if m:
            frames.append((m.group(2), m.group(3), m.group(4)))
    top = next((f for f in frames if project_frame(f[1])), None)
    first = next((f for f in frames
                  if not f[0].startswith(RUNTIME_FRAMES)), None)
    stage = stages[-1] if stages else "?"
    norm = re.sub(r"0x[0-9a-f]+|\d+", "N", msg)[:120]
    where = top or first
    where_s = f"{where[0][:100]} {Path(where[1]).name}:{where[2]}" \
        if where else "?"
    signature = f"{kind}|{norm}|{where[0][:100] if where else '?'}"
    upstream = (top is None and stage in ("parse", "verify", "print input",
                                          "parse back input"))
    return signature, {
        "kind": kind, "message": msg.strip()[:300], "stage": stage,
        "pipeline": pipeline.group(1).strip() if pipeline else "?",
        "where": where_s,
        "project_frame": f"{Path(top[1]).resolve().relative_to(ROOT)}:{top[2]}"
        if top else None,
        "upstream": upstream,
    }


def minimize_lines(fuzzer, data, signature, timeout, budget_s=180):
    """Drops MLIR lines (then chunks) as long as the signature stays."""
    head, lines = data[:HEADER_SIZE], data[HEADER_SIZE:].split(b"\n")
    deadline = time.time() + budget_s
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"fuzzmin-{os.getpid()}"
    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and time.time() < deadline:
        i, changed = 0, False
        while i < len(lines) and time.time() < deadline:
            trial = lines[:i] + lines[i + chunk:]
            tmp.write_bytes(head + b"\n".join(trial))
            got = analyze(*replay(fuzzer, tmp, timeout))
            if got and got[0] == signature:
                lines, changed = trial, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    tmp.unlink(missing_ok=True)
    return head + b"\n".join(lines)


def opt_command(pipeline, mlir_name):
    if pipeline in ("?", "(verify only)"):
        return f"gated-attention-opt --mlir-disable-threading {mlir_name}"
    return (f"gated-attention-opt --mlir-disable-threading "
            f"--pass-pipeline='{pipeline}' {mlir_name}")


def triage(fuzzer, artifacts, out, timeout, minimize=False):
    """Replays `artifacts`; returns the number of project findings."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seen = {}
    for a in artifacts:
        a = Path(a)
        data = a.read_bytes()
        rc, log = replay(fuzzer, a, timeout)
        got = analyze(rc, log)
        if got is None:
            kind = a.name.split("-")[0]
            got = (f"not-reproduced|{kind}", {
                "kind": "not reproduced (" + kind + ")", "message": "",
                "stage": "?", "pipeline": "?", "where": "?",
                "project_frame": None, "upstream": False})
        sig, info = got
        if sig in seen:
            seen[sig]["count"] += 1
            continue
        info["count"] = 1
        slug = hashlib.sha1(sig.encode()).hexdigest()[:10]
        info["id"] = slug
        if minimize and not sig.startswith("not-reproduced"):
            data = minimize_lines(fuzzer, data, sig, timeout)
        (out / f"{slug}.bin").write_bytes(data)
        (out / f"{slug}.mlir").write_bytes(data[HEADER_SIZE:])
        if sig.startswith("not-reproduced"):
            (out / f"{slug}.log").write_text(log)
        else:
            rc2, log2 = replay(fuzzer, out / f"{slug}.bin", timeout)
            (out / f"{slug}.log").write_text(log2)
        info["command"] = opt_command(info["pipeline"], f"{slug}.mlir")
        seen[sig] = info
    failing = 0
    if seen:
        print(f"fuzz: {len(seen)} distinct findings in {out}:")
    for sig, info in seen.items():
        # A timeout or OOM that a replay does not reproduce was load on this
        # machine (inputs near -timeout), not a hang: listed, not counted.
        flaky = sig in ("not-reproduced|timeout", "not-reproduced|oom")
        tag = "upstream" if info["upstream"] else \
            "unconfirmed" if flaky else "FINDING"
        if tag == "FINDING":
            failing += 1
        print(f"  [{tag}] {info['id']} x{info['count']}: {info['kind']}: "
              f"{info['message'][:160]}\n      stage {info['stage']}; "
              f"{info['pipeline']}\n      at {info['where']}\n"
              f"      {info['command']}")
    with open(out / "findings.jsonl", "a") as f:
        for info in seen.values():
            f.write(json.dumps(dict(info, date=time.strftime("%F %T"))) + "\n")
    return failing


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seeds")
    s.add_argument("out")
    s.add_argument("--all-seeds", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("fuzzer")
    r.add_argument("--seconds", type=int, default=600)
    r.add_argument("--jobs", type=int, default=1,
                   help="1: one process, restarted after each finding; "
                        "J > 1: libFuzzer's -fork=J")
    r.add_argument("--work", default="build-asan/fuzz")
    r.add_argument("--timeout", type=int, default=60)
    r.add_argument("--rss-limit-mb", type=int, default=4096)
    r.add_argument("--max-len", type=int, default=16384)
    # The whole set is ~6x as many inputs: libFuzzer's start-up replays
    # them at ~1 per second, 40 minutes before the first mutation.
    r.add_argument("--all-seeds", action="store_true")
    r.add_argument("--seed-pipelines", type=int, choices=(1, 2), default=2,
                   help="pipelines per lit chunk in the default seeds")
    r.add_argument("--seed-rotation", type=int, default=0,
                   help="where the seeds' round robin of pipelines starts")
    r.add_argument("--minimize", action="store_true")
    t = sub.add_parser("triage")
    t.add_argument("fuzzer")
    t.add_argument("artifacts", nargs="+")
    t.add_argument("--out", default="build-asan/fuzz/findings")
    t.add_argument("--timeout", type=int, default=60)
    t.add_argument("--minimize", action="store_true")
    args = ap.parse_args()
    if args.cmd == "seeds":
        print(write_seeds(args.out, small=not args.all_seeds))
        return 0
    if args.cmd == "run":
        return run_fuzzer(args)
    return 1 if triage(args.fuzzer, args.artifacts, args.out, args.timeout,
                       args.minimize) else 0


if __name__ == "__main__":
    sys.exit(main())
