# RUN: %PYTHON %s
"""The kernel cache (GATED_ATTENTION_CACHE_DIR) shared by concurrent
processes: 6 processes, started at staggered times, compile and read the
same kernel in one directory for a few seconds while two of them keep
deleting the entry, so that the others write it again and again while the
rest read. Every call must return exactly the kernel compiled without a
cache: never an empty or truncated PTX, a partial JSON or an exception. No
temporary file may be left behind, and a damaged entry is recompiled, not
returned. No GPU needed; the workers' "tool" replays the real tool's
output, so that hundreds of writes race with reads in a few seconds."""

import collections
import dataclasses
import json
import os
import subprocess
import sys
import tempfile

import gated_attention as ga
from gated_attention import cuda, mlir, runner

CFG = ga.AttentionConfig(hq=4, hkv=2, sq=1, skv=1, d=64, dv=64, dtype="f16",
                         gate="silu", causal=True, dynamic=("b", "sq", "skv"))
WORKERS, SECONDS = 6, 4.0

WORKER = r"""
import collections, json, os, random, sys, time
import gated_attention as ga
from gated_attention import cuda
cfg = ga.AttentionConfig(**json.loads(sys.argv[1]))
golden = json.loads(sys.stdin.read())
delay, seconds, deleter = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
opt = sys.argv[5]
rng = random.Random(os.getpid())
cache = os.environ["GATED_ATTENTION_CACHE_DIR"]
time.sleep(delay)
end = time.time() + seconds
seen = collections.Counter()
while time.time() < end:
    if deleter and rng.random() < 0.3:
        for f in os.listdir(cache):
            if f.endswith((".json", ".ptx")):
                try:
                    os.remove(os.path.join(cache, f))
                except FileNotFoundError:
                    pass
    try:
        name, ptx, desc = cuda.compile_kernel(cfg, opt=opt)
        ok = [name, ptx, desc] == golden
        seen["ok" if ok else f"wrong kernel (ptx {len(ptx)} chars)"] += 1
    except Exception as e:
        seen[f"{type(e).__name__}: {str(e)[:100]}"] += 1
print(json.dumps(seen))
"""

golden = list(cuda.compile_kernel(CFG, cache=""))
with tempfile.TemporaryDirectory() as cache, \
        tempfile.TemporaryDirectory() as tools:
    # A stand-in for gated-attention-opt that prints what the real one
    # printed for this config (compile_kernel's PTX pipeline), at once.
    lowered = os.path.join(tools, "lowered.mlir")
    with open(lowered, "w") as f:
        f.write(runner.compile_module(
            mlir.attention_function(CFG, "case"),
            ["--gated-attention-to-ptx=chip=sm_90"]))
    fake_opt = os.path.join(tools, "opt.sh")
    with open(fake_opt, "w") as f:
        f.write(f"#!/bin/sh\ncat >/dev/null\ncat '{lowered}'\n")
    os.chmod(fake_opt, 0o755)
    env = dict(os.environ, GATED_ATTENTION_CACHE_DIR=cache)
    procs = []
    for i in range(WORKERS):
        # Staggered starts: the first ones compile into an empty cache while
        # the later ones arrive and read; two of them delete entries.
        delay = 0.4 * i
        procs.append(subprocess.Popen(
            [sys.executable, "-c", WORKER,
             json.dumps(dataclasses.asdict(CFG)), str(delay),
             str(SECONDS - delay), "1" if i in (1, 4) else "0", fake_opt],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env))
    for p in procs:
        p.stdin.write(json.dumps(golden))
        p.stdin.close()
    total = collections.Counter()
    for p in procs:
        out, err = p.stdout.read(), p.stderr.read()
        assert p.wait() == 0, err
        total.update(json.loads(out.strip().splitlines()[-1]))
    print(f"calls: {dict(total)}")
    assert set(total) == {"ok"}, total
    assert total["ok"] >= 100 * WORKERS, total
    leftover = [f for f in os.listdir(cache)
                if not f.endswith((".json", ".ptx"))]
    assert not leftover, leftover
    print(f"PASS {WORKERS} concurrent processes, {total['ok']} calls, "
          f"every one the golden kernel, no temporary file left")

    # A damaged entry (an older writer's truncated PTX, a JSON cut short)
    # is a miss: recompiled and rewritten, never returned.
    os.environ["GATED_ATTENTION_CACHE_DIR"] = cache
    assert list(cuda.compile_kernel(CFG)) == golden
    stem = os.path.join(cache, next(f for f in os.listdir(cache)
                                    if f.endswith(".json"))[:-5])
    for path, damage in ((stem + ".ptx", ""), (stem + ".ptx", golden[1][:99]),
                         (stem + ".json", '{"format": 2, "kern'),
                         (stem + ".json", "")):
        with open(path) as f:
            intact = f.read()
        with open(path, "w") as f:
            f.write(damage)
        assert list(cuda.compile_kernel(CFG)) == golden, path
        with open(path) as f:
            assert f.read() == intact, f"{path} not rewritten"
    # An intact entry is read without compiling (a tool that does not
    # exist would fail).
    assert list(cuda.compile_kernel(
        CFG, opt="/nonexistent/gated-attention-opt")) == golden
    print("PASS damaged entries are recompiled, intact ones read back")

# One cache for every entry point: compile_kernel (ga.attention's) uses
# GATED_ATTENTION_CACHE_DIR as the torch ops do; its old variable,
# GATED_ATTENTION_KERNEL_CACHE, is read only when that one is not set, with
# a DeprecationWarning.
import warnings  # noqa: E402
from gated_attention import kernel_cache  # noqa: E402
saved = {name: os.environ.pop(name, None) for name in
         ("GATED_ATTENTION_CACHE_DIR", "GATED_ATTENTION_KERNEL_CACHE")}
with tempfile.TemporaryDirectory() as old, \
        tempfile.TemporaryDirectory() as new:
    os.environ["GATED_ATTENTION_KERNEL_CACHE"] = old
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(cuda.compile_kernel(CFG)) == golden
    assert any(issubclass(w.category, DeprecationWarning)
               and "GATED_ATTENTION_CACHE_DIR" in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    assert any(f.endswith(".ptx") for f in os.listdir(old)), os.listdir(old)
    os.environ["GATED_ATTENTION_CACHE_DIR"] = new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kernel_cache.directory() == new
        assert list(cuda.compile_kernel(CFG)) == golden
    assert any(f.endswith(".ptx") for f in os.listdir(new)), os.listdir(new)
    os.environ["GATED_ATTENTION_CACHE_DIR"] = "off"
    assert kernel_cache.directory() is None

# Entries name the tool that compiled them: after a rebuild (here: the
# tool's mtime moves) the entry is a miss and compiled again, never the
# stale kernel (compiling with a tool that does not exist then fails); a
# machine without the tool (a GPU machine) takes it.
with tempfile.TemporaryDirectory() as tmp:
    tool = os.path.join(tmp, "gated-attention-opt")
    with open(tool, "w") as f:
        f.write(f"#!/bin/sh\nexec '{runner.opt_path()}' \"$@\"\n")
    os.chmod(tool, 0o755)
    os.environ["GATED_ATTENTION_OPT"] = tool
    os.environ["GATED_ATTENTION_CACHE_DIR"] = os.path.join(tmp, "cache")
    assert list(cuda.compile_kernel(CFG)) == golden
    missing = "/nonexistent/gated-attention-opt"
    assert list(cuda.compile_kernel(CFG, opt=missing)) == golden
    os.environ["GATED_ATTENTION_OPT"] = missing
    assert list(cuda.compile_kernel(CFG)) == golden
    os.environ["GATED_ATTENTION_OPT"] = tool
    st = os.stat(tool)
    os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    try:
        cuda.compile_kernel(CFG, opt=missing)
        raise AssertionError("a kernel of the tool before its rebuild")
    except runner.ToolError as e:
        assert missing in str(e), e
    del os.environ["GATED_ATTENTION_OPT"]
for name, value in saved.items():
    os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
print("PASS GATED_ATTENTION_CACHE_DIR for every entry point, the old "
      "variable read with a DeprecationWarning, a rebuilt tool a miss")
