# REQUIRES: torch
# RUN: %PYTHON %s
"""The persistent sm_90a kernel through the Python paths, without a GPU
(compiles real, device and launches faked): cuda.compile_kernel's
persistent=True reaches the tool (the launch description says
"persistent") and has its own disk-cache entry, never the one-tile
kernel's; CudaAttention.compile passes it; GATED_ATTENTION_CUDA_PERSISTENT=1
makes a faked 9.0 device's torch op launch min(tiles, 132 SMs) CTAs, and
the mma.sync kernels ignore it; warmup(chip=, persistent=) compiles it
ahead of time. Bad values are ValueErrors naming the option."""

import os
import tempfile

import torch

from gated_attention import compiler, config, cuda, launch, launcher
from gated_attention.testing.fake_cuda import fake_device
from gated_attention.testing.logs import recorded
import gated_attention.torch as gat
from gated_attention.torch import _args, _cuda, _select

ENV = _select.PERSISTENT_ENV
os.environ.pop(ENV, None)
os.environ.pop(_select.ENV, None)


def cfg_of(spec):
    return _args.compile_key(config.parse_cases(spec)[0])


def raises(words, f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except ValueError as e:
        assert all(w in str(e) for w in words), e
        return
    raise AssertionError(f"no ValueError naming {words}")


CFG = cfg_of("dtype=bf16,d=64,dv=64,hq=4,hkv=2,causal=1")
compiles = recorded("compiling")

# 1. compile_kernel: the option reaches the kernel, one cache entry each.
with tempfile.TemporaryDirectory() as tmp:
    one = cuda.compile_kernel(CFG, chip="sm_90a", kernel="wgmma", cache=tmp)
    loops = cuda.compile_kernel(CFG, chip="sm_90a", kernel="wgmma",
                                cache=tmp, persistent=True)
    assert "persistent" not in one[2] and one[0].endswith("_sm90a"), one[0]
    assert loops[2]["persistent"] is True and loops[2]["ctas_per_sm"] >= 1
    assert loops[0].endswith("_persistent") and loops[1] != one[1]
    entries = sorted(n for n in os.listdir(tmp) if n.endswith(".json"))
    assert len(entries) == 2, entries
    # Read back from the cache: each its own kernel, nothing compiled.
    compiles.clear()
    assert cuda.compile_kernel(CFG, chip="sm_90a", kernel="wgmma",
                               cache=tmp, persistent=True) == loops
    assert cuda.compile_kernel(CFG, chip="sm_90a", kernel="wgmma",
                               cache=tmp) == one
    assert not compiles, compiles
# The grid: one CTA per tile without an SM count, at most one per SM with.
tiles = 2 * 4 * 3   # B x Hq x ceildiv(300, 128)
assert launch.grid(loops[2], 2, sq=300, skv=300) == (3, 4, 2)
assert launch.grid(loops[2], 2, sq=300, skv=300, sm_count=10) == (10, 1, 1)
assert launch.grid(loops[2], 2, sq=300, skv=300, sm_count=132) == (
    tiles, 1, 1)
assert launch.grid(one[2], 2, sq=300, skv=300, sm_count=10) == (3, 4, 2)
# CudaAttention compiles the same (the wgmma kernel of auto on sm_90a).
dyn = compiler.CudaAttention.compile(CFG, "sm_90a", persistent=True)[2]
assert dyn["persistent"] is True, dyn
raises(["persistent must be True or False", "'yes'"], cuda.compile_kernel,
       CFG, chip="sm_90a", persistent="yes")
raises(["persistent=True needs the wgmma kernel", "chip sm_90 "],
       cuda.compile_kernel, CFG, chip="sm_90", persistent=True)
raises(["persistent=True needs the wgmma kernel", "kernel mma-sync"],
       cuda.compile_kernel, CFG, chip="sm_90a", kernel="mma-sync",
       persistent=True)
print("PASS compile_kernel persistent")

# 2. The environment variable.
assert _select.persistent() is False
for value, want in (("1", True), ("0", False), ("", False)):
    os.environ[ENV] = value
    assert _select.persistent() is want, value
    assert _select.persistent(False) is False
os.environ[ENV] = "yes"
raises([ENV, "must be 0 or 1", "'yes'"], _select.persistent)
raises(["persistent must be True, False or None", "1"], _select.persistent,
       1)
os.environ.pop(ENV)
print(f"PASS {ENV}")

# 3. A faked 9.0 device (132 SMs): the torch op's launches.
device, faked = fake_device((9, 0))
launches = []


class Backend:
    """cuda.Backend's interface, recording launches (no `prepare`: the
    torch op then launches through `launch`)."""

    def __init__(self, driver):
        self.kernel = lambda ptx, desc: launcher.Kernel(self, ptx, desc)
    load = staticmethod(lambda ptx, desc: ptx)
    address = staticmethod(int)
    launch = staticmethod(lambda ptx, planned, stream=None:
                          launches.append(planned))


cuda.Backend = Backend


def grid_of(cfg, b, s):
    """The grid of the torch op's launch on [B, H, S, D] zeros."""
    launches.clear()
    kernel = _cuda.CudaKernel(cfg, device)
    q = torch.zeros(b, cfg.hq, s, cfg.d, dtype=torch.bfloat16)
    k = torch.zeros(b, cfg.hkv, s, cfg.d, dtype=torch.bfloat16)
    kernel(q, k, k, q, torch.empty_like(q))
    (planned,) = launches
    return planned.desc.get("persistent", False), planned.grid


assert grid_of(CFG, 2, 300) == (False, (3, 4, 2))
os.environ[ENV] = "1"
assert grid_of(CFG, 2, 300) == (True, (24, 1, 1))
assert grid_of(CFG, 40, 1000) == (True, (132, 1, 1))   # 1,280 tiles
# mma.sync (kernel=mma-sync, or a head dim wgmma does not take) ignores it.
os.environ[_select.ENV] = "mma-sync"
assert grid_of(CFG, 2, 300) == (False, (5, 4, 2))   # 64-row CTAs
os.environ.pop(_select.ENV)
assert grid_of(cfg_of("dtype=bf16,d=96,dv=96,hq=4,hkv=4"), 2, 300)[0] is False
os.environ.pop(ENV)
print("PASS the faked device's persistent launches")

# 4. warmup(chip="sm_90a", persistent=True): the persistent kernel's PTX in
# the cache; persistent= without chip= is an error.
with tempfile.TemporaryDirectory() as tmp:
    gat.set_cache_dir(tmp)
    try:
        meta = dict(dtype=torch.bfloat16, device="meta")
        q, k = (torch.empty(1, h, 32, 64, **meta) for h in (4, 2))
        gat.warmup(q, k, k, q, causal=True, chip="sm_90a", persistent=True)
        names = [open(os.path.join(tmp, n)).read() for n in os.listdir(tmp)
                 if n.endswith(".ptx")]
        assert any(".entry gated_attention_bf16_h4x2_d64_causal_sm90a_"
                   "persistent(" in ptx for ptx in names), len(names)
        raises(["persistent= goes with chip="], gat.warmup, q, k, k, q,
               causal=True, persistent=True)
    finally:
        gat.set_cache_dir(None)
print("PASS warmup persistent")
