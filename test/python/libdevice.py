# RUN: %PYTHON %s
"""PTX that calls libdevice functions it does not define (`.extern .func
__nv_expf`: libdevice was not linked) is never returned by ga.compile_ptx,
cuda.compile_kernel or `python3 -m gated_attention.ptx`, nor stored in or
read from the kernel cache: an error names the missing functions. Checked
with a tool that injects such a declaration into real output (whatever the
tool itself does), and with the real tool when no CUDA toolkit is named."""

import os
import subprocess
import sys
import tempfile

import gated_attention as ga
from gated_attention import cuda, ptx, runner

CFG = ga.AttentionConfig(hq=4, hkv=2, sq=32, skv=32, d=64, dv=64,
                         dtype="bf16")
text = ga.attention_ir(CFG)
opt = runner.tool_paths()["opt"]

# What a toolkit-less build emitted (and ptxas alone rejected), escaped as
# in the gpu.binary's assembly string.
DECL = (".extern .func  (.param .b32 func_retval0) __nv_expf\n(\n\t.param "
        ".b32 __nv_expf_param_0\n)\n;\n")
ESCAPED = DECL.replace("\n", "\\0A").replace("\t", "\\09")

assert ptx.unresolved_functions(DECL) == ["__nv_expf"]
assert ptx.unresolved_functions(".extern .func __nv_exp2f(.param .b32 x);") \
    == ["__nv_exp2f"]
good = ga.compile_ptx(text)
assert good and not ptx.unresolved_functions(good[0][1])

with tempfile.TemporaryDirectory() as tmp:
    # gated-attention-opt, then the declaration spliced in after the PTX's
    # `.address_size` line.
    fake = os.path.join(tmp, "opt.sh")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\n'{opt}' \"$@\" | sed "
                f"'s/\\(\\.address_size 64\\\\0A\\)/\\1{ESCAPED}/'\n")
    os.chmod(fake, 0o755)
    lowered = runner.compile_module(
        text, ["--gated-attention-to-ptx=chip=sm_90"], opt=fake)
    assert "__nv_expf" in lowered, "the fake tool did not inject"

    def fails(fn, what):
        try:
            fn()
        except ptx.MissingLibdeviceError as e:
            assert "__nv_expf" in str(e) and "libdevice" in str(e), e
            assert "CUDA_HOME" in str(e), e
            print(f"PASS {what}: {e}")
        else:
            raise AssertionError(f"{what} returned PTX with __nv_expf")

    os.environ["GATED_ATTENTION_OPT"] = fake
    fails(lambda: ga.compile_ptx(text), "compile_ptx")
    fails(lambda: ga.compile_ptx(text, kernels="all"), "compile_ptx (all)")
    cache = os.path.join(tmp, "cache")
    saved_cache_dir = os.environ.get("GATED_ATTENTION_CACHE_DIR")
    os.environ["GATED_ATTENTION_CACHE_DIR"] = cache
    fails(lambda: cuda.compile_kernel(CFG, opt=fake), "compile_kernel")
    assert not os.path.exists(cache) or not os.listdir(cache), \
        "stored in the cache"

    # An entry stored before this check (by an older version) is not
    # returned: it is recompiled (here: still failing).
    del os.environ["GATED_ATTENTION_OPT"]
    cuda.compile_kernel(CFG)
    stems = {f.rsplit(".", 1)[0] for f in os.listdir(cache)}
    assert len(stems) == 1
    stem = os.path.join(cache, stems.pop())
    with open(stem + ".ptx") as f:
        body = f.read()
    bad = body.replace(".address_size 64\n", ".address_size 64\n" + DECL, 1)
    assert bad != body
    import hashlib
    import json
    with open(stem + ".json") as f:
        entry = json.load(f)
    entry["ptx_sha256"] = hashlib.sha256(bad.encode()).hexdigest()
    with open(stem + ".ptx", "w") as f:
        f.write(bad)
    with open(stem + ".json", "w") as f:
        json.dump(entry, f)
    fails(lambda: cuda.compile_kernel(CFG, opt=fake), "a cached entry")
    os.environ.pop("GATED_ATTENTION_CACHE_DIR")
    if saved_cache_dir is not None:
        os.environ["GATED_ATTENTION_CACHE_DIR"] = saved_cache_dir

    # The command line tool refuses to write such PTX.
    path = os.path.join(tmp, "lowered.mlir")
    with open(path, "w") as f:
        f.write(lowered)
    out = os.path.join(tmp, "out")
    proc = subprocess.run([sys.executable, "-m", "gated_attention.ptx", path,
                           "-o", out], capture_output=True, text=True)
    assert proc.returncode == 1 and "__nv_expf" in proc.stderr, proc
    assert not os.path.exists(out) or not any(
        f.endswith(".ptx") for f in os.listdir(out))
    print("PASS python3 -m gated_attention.ptx: error, no .ptx written")

# The real tool without a CUDA toolkit: an error (the tool's or this
# check's), never PTX that declares libdevice functions.
env_home = {v: os.environ.pop(v, None) for v in ("CUDA_HOME", "CUDA_PATH",
                                                 "CUDA_ROOT")}
try:
    kernels = ga.compile_ptx(text)
except runner.ToolError as e:
    print(f"PASS no toolkit: {type(e).__name__}: "
          f"{str(e).splitlines()[-1][:120]}")
else:
    assert all(not ptx.unresolved_functions(t) for _, t, _ in kernels)
    print("PASS no toolkit: PTX without libdevice calls")
finally:
    os.environ.update({k: v for k, v in env_home.items() if v})
