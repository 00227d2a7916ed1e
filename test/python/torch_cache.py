# REQUIRES: torch
# RUN: %PYTHON %s
"""The torch op's kernels on disk: a compile is logged and kept; another
process loads it without compiling; processes compiling the same kernel at
once into an empty directory all succeed and leave one intact entry and no
temporary file; a damaged entry is compiled again, not loaded; warmup()
compiles from meta tensors; an unwritable directory and a disabled cache
still give results."""

import glob
import os
import subprocess
import sys
import tempfile

WORKER = r"""
import sys, torch
from gated_attention.testing.logs import recorded
records = recorded()
import gated_attention.torch as gat
torch.manual_seed(3)
q, g = torch.randn(1, 4, 19, 32), torch.randn(1, 4, 19, 32)
k, v = torch.randn(1, 2, 23, 32), torch.randn(1, 2, 23, 32)
if sys.argv[1] == "warmup":
    m = lambda *s: torch.empty(*s, device="meta")
    gat.warmup(m(1, 4, 1, 32), m(1, 2, 1, 32), m(1, 2, 1, 32), m(1, 4, 1, 32),
               causal=True, device="cpu")
out = gat.attention(q, k, v, g, causal=True)
compiles = sum(m.startswith("compiling") for m in records)
print(compiles, float(out.double().sum()))
print("\n".join(records), file=sys.stderr)
"""


def run(cache, mode="run", wait=True):
    env = dict(os.environ)
    if cache is None:
        env["GATED_ATTENTION_CACHE_DIR"] = "off"
    else:
        env["GATED_ATTENTION_CACHE_DIR"] = cache
    proc = subprocess.Popen([sys.executable, "-c", WORKER, mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    return finish(proc) if wait else proc


def finish(proc):
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    compiles, total = out.split()
    return int(compiles), float(total), err


with tempfile.TemporaryDirectory() as tmp:
    cache = os.path.join(tmp, "cache")
    # 1. Compiled and logged once; the next process loads it.
    n, expected, log = run(cache)
    assert n == 1 and "compiled" in log and cache in log, log
    assert "hq=4,hkv=2,d=32" in log and "sq=" not in log, log
    entries = glob.glob(os.path.join(cache, "*.so"))
    assert len(entries) == 1 and os.path.exists(entries[0] + ".json")
    n, total, log = run(cache)
    assert n == 0 and total == expected, (n, log)

    # 2. Six processes compile the same kernel into an empty directory.
    race = os.path.join(tmp, "race")
    procs = [run(race, wait=False) for _ in range(6)]
    results = [finish(p) for p in procs]
    assert all(t == expected for _, t, _ in results), results
    assert len(glob.glob(os.path.join(race, "*.so"))) == 1
    left = [f for f in os.listdir(race) if f.endswith(".tmp")]
    assert not left, left
    assert run(race)[0] == 0

    # 3. A damaged entry (truncated library) is a miss: compiled again.
    with open(entries[0], "r+b") as f:
        f.truncate(100)
    n, total, _ = run(cache)
    assert n == 1 and total == expected
    assert run(cache)[0] == 0

    # 4. warmup() from meta tensors compiles; the call then does not.
    n, total, log = run(os.path.join(tmp, "warm"), "warmup")
    assert n == 1 and total == expected, log

    # 5. No disk cache, or one that cannot be written: still a result.
    n, total, _ = run(None)
    assert n == 1 and total == expected
    blocker = os.path.join(tmp, "file")
    open(blocker, "w").close()
    n, total, log = run(os.path.join(blocker, "cache"))
    assert n == 1 and total == expected and "cannot write" in log, log
print("kernel cache: ok")
