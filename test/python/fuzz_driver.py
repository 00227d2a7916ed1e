# RUN: %PYTHON %s
"""scripts/fuzz's driver counts a run that is interrupted: a SIGINT to the
driver (Ctrl-C, `kill -INT`) or to libFuzzer alone ends the run with
libFuzzer's final stats, which the driver records in executions.jsonl
(marked "interrupted", with the target's last snapshot of its outcomes)
before it exits 130. A fuzzer that fails without a
finding is still an error (exit 1). The "fuzzer" here is a stand-in that
behaves as libFuzzer does on SIGINT: prints its final stats, exits 72."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tools" / "gated-attention-fuzz" / "driver.py"

FAKE = """#!{python}
import os, signal, sys, time
def stop(signum, frame):
    print("==1== libFuzzer: run interrupted; exiting")
    print("stat::number_of_executed_units: 42", flush=True)
    os._exit(72)
signal.signal(signal.SIGINT, stop)
# What the target keeps per process (a snapshot, replaced each minute).
stats = os.environ["GATED_ATTENTION_FUZZ_STATS"] + "." + str(os.getpid())
open(stats, "w").write('{{"tile": {{"done": 40, "verify": 2}}}}\\n')
open("ready", "w").write(str(os.getpid()))
if os.environ.get("FAKE_FAIL"):
    sys.exit(3)
time.sleep(60)
print("stat::number_of_executed_units: 1000", flush=True)
"""


def run(case, fail=False):
    work = Path(tempfile.mkdtemp(prefix=f"fuzz-driver-{case}-"))
    fake = work / "fake-fuzzer"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    env = dict(os.environ, FAKE_FAIL="1" if fail else "")
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), "run", str(fake), "--seconds", "60",
         "--work", str(work)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready = work / "ready"
    deadline = time.time() + 60
    while not fail and not (ready.exists() and ready.read_text()):
        assert time.time() < deadline and driver.poll() is None, \
            driver.communicate()[0]
        time.sleep(0.05)
    if case == "driver":
        driver.send_signal(signal.SIGINT)
    elif case == "fuzzer":
        os.kill(int(ready.read_text()), signal.SIGINT)
    out, _ = driver.communicate(timeout=60)
    records = [json.loads(line) for line in
               (work / "executions.jsonl").read_text().splitlines()]
    return driver.returncode, records, out


for case in ("driver", "fuzzer"):
    rc, records, out = run(case)
    assert rc == 130, (case, rc, out)
    assert len(records) == 1, (case, records)
    assert records[0]["executions"] == 42, (case, records, out)
    assert records[0].get("interrupted") is True, (case, records)
    assert records[0]["project_findings"] == 0, (case, records)
    # The outcomes come from the target's snapshot: it never exits normally.
    assert records[0]["outcomes"] == {"tile": {
        "inputs": 42, "valid": 40, "ran_pipeline": 40, "succeeded": 40}}, \
        (case, records)
    print(f"PASS interrupt via the {case}: 42 executions and their outcomes "
          f"recorded, exit 130")

rc, records, out = run("fail", fail=True)
assert rc == 1, (rc, out)
assert "without a finding" in out, out
assert "interrupted" not in records[0], records
print("PASS a fuzzer failing without a finding is exit 1")

# A rebuild during a run: the run and its triage use the driver's copy of
# the fuzzer, so a crash is replayed by the code that had it (the rebuilt
# one, here exiting 0, would make it "not reproduced").
REBUILT = """#!{python}
import os, sys
if os.environ.get("GATED_ATTENTION_FUZZ_VERBOSE"):   # a replay
    print("gated-attention-fuzz: stage: run pipeline")
    print("==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000")
    sys.exit(1)
open(os.environ["FAKE_ORIGINAL"], "w").write("#!/bin/sh\\nexit 0\\n")
open("artifacts/crash-1", "wb").write(bytes(5) + b"func.func @f()")
print("stat::number_of_executed_units: 5", flush=True)
sys.exit(1)
"""
work = Path(tempfile.mkdtemp(prefix="fuzz-driver-rebuild-"))
fake = work / "fake-fuzzer"
fake.write_text(REBUILT.format(python=sys.executable))
fake.chmod(0o755)
proc = subprocess.run(
    [sys.executable, str(DRIVER), "run", str(fake), "--seconds", "1",
     "--work", str(work / "w")], env=dict(os.environ, FAKE_ORIGINAL=str(fake)),
    capture_output=True, text=True, timeout=120)
assert fake.read_text().startswith("#!/bin/sh"), "the run did not rebuild"
assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
assert "[FINDING]" in proc.stdout and "asan: SEGV" in proc.stdout, proc.stdout
assert "not reproduced" not in proc.stdout, proc.stdout
print("PASS a crash is triaged by the fuzzer that ran, not a rebuilt one")

# Seeds: a chunk of independent functions becomes seeds of at most two
# functions (each op costs seconds under ASan), each with the chunk's
# aliases; a chunk whose functions call each other stays whole.
sys.path.insert(0, str(DRIVER.parent))
import driver as fuzz_driver  # noqa: E402

funcs = "".join(f"func.func @f{i}() {{\n  return\n}}\n" for i in range(5))
seeds = fuzz_driver.split_functions("#map = affine_map<(d0) -> (d0)>\n" + funcs)
assert [s.count("func.func") for s in seeds] == [2, 2, 1], seeds
assert all(s.startswith("#map = ") for s in seeds), seeds
assert "@f4" in seeds[2] and "@f0" in seeds[0], seeds
two = funcs.split("func.func @f2")[0]
assert fuzz_driver.split_functions(two) == [two]
calls = funcs + "func.func @g() {\n  func.call @f0() : () -> ()\n  return\n}\n"
assert fuzz_driver.split_functions(calls) == [calls]
print("PASS seeds of at most two functions, aliases kept, callers whole")

# The default seeds give every lit chunk two or three pipelines (the whole
# set, --all-seeds, every pipeline and option setting): libFuzzer replays
# seeds at ~1 per second before it mutates, so the whole set would spend a
# default 600 s run, and CI's 6 minutes, in start-up.
out = Path(tempfile.mkdtemp(prefix="fuzz-driver-seeds-"))
default = fuzz_driver.write_seeds(out / "default")
everything = fuzz_driver.write_seeds(out / "all", small=False)


def chunks(d):
    return {p.read_bytes()[fuzz_driver.HEADER_SIZE:] for p in d.iterdir()}


assert chunks(out / "default") == chunks(out / "all")
assert 4 * default < everything, (default, everything)
proc = subprocess.run([sys.executable, str(DRIVER), "run", "--help"],
                      capture_output=True, text=True, check=True)
assert "--all-seeds" in proc.stdout and "--small" not in proc.stdout
assert "--seed-pipelines" in proc.stdout and "--seed-rotation" in proc.stdout
print(f"PASS default seeds: every chunk, {default} of {everything} inputs")

# CI's seeds (--seed-pipelines 1): every chunk still, about half the inputs,
# and the rotation moves each chunk to other pipelines from run to run.
def pipelines(d):
    got = {}
    for p in d.iterdir():
        data = p.read_bytes()
        got.setdefault(data[fuzz_driver.HEADER_SIZE:], set()).add(
            data[:fuzz_driver.HEADER_SIZE])
    return got


one = fuzz_driver.write_seeds(out / "one", per_chunk=1)
rotated = fuzz_driver.write_seeds(out / "rotated", per_chunk=1, rotation=1)
assert chunks(out / "one") == chunks(out / "default") == chunks(out / "rotated")
assert 0.4 * default < one < 0.65 * default, (one, default)
first, second = pipelines(out / "one"), pipelines(out / "rotated")
moved = sum(first[c] != second[c] for c in first)
assert moved == len(first), (moved, len(first))
assert fuzz_driver.write_seeds(out / "again") == default
assert pipelines(out / "again") == pipelines(out / "default")
try:
    fuzz_driver.write_seeds(out / "bad", per_chunk=3)
    raise AssertionError("3 pipelines a chunk accepted")
except ValueError as e:
    assert "1 or 2" in str(e)
print(f"PASS CI seeds: every chunk, {one} inputs, rotated")
