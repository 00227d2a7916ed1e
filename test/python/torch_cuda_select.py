# REQUIRES: torch
# RUN: %PYTHON %s
"""Which kernels the torch op runs on a CUDA device, without one (compute
capability, driver and launches faked; the compiles are real): compute
capability 9.0 takes the sm_90a wgmma kernels, forward and backward, where
the head dims fit them and mma.sync compiled for sm_90 where not, other
devices their chip's mma.sync; GATED_ATTENTION_CUDA_KERNEL overrides that
and a bad value is a ValueError naming it and the choices. A CudaKernel
on a faked 9.0 device launches the wgmma kernel with q, k, v copied to
contiguous buffers (it reads them through TMA maps) and the gate and output
in place, and a decode step on mma.sync. warmup(chip="sm_90a") puts the
wgmma kernels' PTX (wgmma.mma_async) into the disk cache for the forward
and the backward, and that cache holds all the faked device then loads
(nothing compiled); kernel="mma-sync" adds the sm_90 mma.sync ones."""

import contextlib
import os
import tempfile

import torch

import gated_attention.torch as gat
from gated_attention import config, cuda, launcher
from gated_attention.testing.fake_cuda import fake_device
from gated_attention.testing.logs import recorded
from gated_attention.torch import _args, _cuda, _cuda_backward, _select

ENV = "GATED_ATTENTION_CUDA_KERNEL"
os.environ.pop(ENV, None)


def cfg_of(spec):
    return _args.compile_key(config.parse_cases(spec)[0])


@contextlib.contextmanager
def env(value):
    """GATED_ATTENTION_CUDA_KERNEL set to `value` (None: unset) within."""
    old = os.environ.pop(ENV, None)
    if value is not None:
        os.environ[ENV] = value
    try:
        yield
    finally:
        os.environ.pop(ENV, None)
        if old is not None:
            os.environ[ENV] = old


D128 = cfg_of("dtype=bf16,d=128,dv=128,hq=8,hkv=2,causal=1")
D256 = cfg_of("dtype=bf16,d=256,dv=256,hq=4,hkv=2,causal=1")
D96 = cfg_of("dtype=f16,d=96,dv=96,hq=4,hkv=4")
D192 = cfg_of("dtype=bf16,d=192,dv=192,hq=4,hkv=4")
MMA90 = ("sm_90", "mma-sync")
WGMMA = ("sm_90a", "wgmma")

# 1. The selection: capability -> (chip, kernel), forward and backward.
for capability, chip in ((8, 0), "sm_80"), ((8, 6), "sm_86"), \
        ((8, 9), "sm_89"):
    assert _cuda.targets(D128, capability) == ((chip, "mma-sync"),) * 2
    assert _select.backward(D128, capability) == (chip, "mma-sync")
assert _cuda.targets(D128, (9, 0)) == (WGMMA, MMA90)
assert _select.backward(D128, (9, 0)) == WGMMA
assert _select.forward(D256, (9, 0)) == WGMMA
# D 256's wgmma backward hung on an H200: its backward stays mma.sync, also
# when the user asks for wgmma.
assert _select.backward(D256, (9, 0)) == MMA90
with env("wgmma"):
    assert _select.backward(D256, (9, 0)) == MMA90
# Head dims the wgmma kernels do not take (the tool fell back to mma.sync
# on sm_90a): sm_90's mma.sync. D = 192 fits the forward (a multiple of
# 64), not the backward (above 128 it takes 256 only).
assert _select.forward(D96, (9, 0)) == MMA90
assert _select.backward(D96, (9, 0)) == MMA90
assert _select.forward(D192, (9, 0)) == WGMMA
assert _select.backward(D192, (9, 0)) == MMA90
print("PASS capability -> (chip, kernel)")

# 2. The environment variable.
with env("mma-sync"):
    assert _cuda.targets(D128, (9, 0)) == (MMA90, MMA90)
    assert _select.backward(D128, (9, 0)) == MMA90
for value in ("wgmma", "auto", ""):
    with env(value):
        assert _cuda.targets(D128, (9, 0)) == (WGMMA, MMA90), value
        assert _select.forward(D96, (9, 0)) == MMA90, value
with env("auto"):
    assert _select.forward(D128, (8, 0)) == ("sm_80", "mma-sync")
for value, capability, words in (
        ("wgmma", (8, 0), "need compute capability 9.0"),
        ("fast", (9, 0), "must be one of auto, mma-sync, wgmma, got 'fast'"),
        ("mma_sync", (8, 0), "must be one of auto, mma-sync, wgmma")):
    with env(value):
        try:
            _select.forward(D128, capability)
            raise AssertionError(f"no error for {ENV}={value}")
        except ValueError as e:
            assert ENV in str(e) and words in str(e), e
try:
    _select.candidates((9, 0), kernel="sm_90a")
    raise AssertionError("no error")
except ValueError as e:
    assert "kernel must be one of" in str(e), e
print(f"PASS {ENV}")

# 3. A CudaKernel on a faked device of compute capability `capability`:
# kernels compiled for real, launches recorded.
device, faked = fake_device((9, 0))
launches = []


class Backend:
    """cuda.Backend's interface, recording launches."""

    def __init__(self, driver):
        pass

    def kernel(self, ptx, desc):
        return launcher.Kernel(self, ptx, desc)

    def load(self, ptx, desc):
        return ptx

    def address(self, buffer):
        return int(buffer)

    def launch(self, ptx, planned, stream=None):
        launches.append((ptx, planned))


cuda.Backend = Backend

faked.capability = (7, 5)
try:
    _cuda.CudaKernel(D128, device)
    raise AssertionError("no error")
except NotImplementedError as e:
    assert "compute capability 7.5 (stand-in)" in str(e), e
faked.capability = (9, 0)

kernel = _cuda.CudaKernel(D128, device)
assert kernel._target == WGMMA and kernel._desc["instructions"] == "wgmma"
# [B, S, H, D] q, k, v (copied: the kernel reads TMA maps), q and the gate
# halves of one projection; the output [B, S, H, D] written in place.
b, s = 2, 64
proj = torch.zeros(b, s, 8, 256, dtype=torch.bfloat16)
q, g = (proj[..., i:i + 128].transpose(1, 2) for i in (0, 128))
k, v = (torch.zeros(b, s, 2, 128, dtype=torch.bfloat16).transpose(1, 2)
        for _ in range(2))
out = torch.empty(b, s, 8, 128, dtype=torch.bfloat16).transpose(1, 2)
kernel(q, k, v, g, out)
(ptx, planned), = launches
assert "wgmma.mma_async" in ptx and planned.desc["instructions"] == "wgmma"
args = {a.name: a for a in planned.arguments}
assert all(isinstance(args[n], launcher.TensorMap) for n in "qkv")
assert args["q"].buffer != q.data_ptr() and args["k"].buffer != k.data_ptr()
assert args["gate"].buffer == g.data_ptr() and args["out"].buffer == \
    out.data_ptr()
assert args["out.H"].value == 128 and args["gate.B"].value == s * 8 * 256
# [B, H, S, D]-contiguous q, k, v go in place.
launches.clear()
qc = torch.zeros(b, 8, s, 128, dtype=torch.bfloat16)
kc = torch.zeros(b, 2, s, 128, dtype=torch.bfloat16)
kernel(qc, kc, kc, qc, torch.empty_like(qc))
args = {a.name: a for a in launches[0][1].arguments}
assert args["q"].buffer == qc.data_ptr() and args["k"].buffer == \
    kc.data_ptr()
# A decode step: mma.sync, the K/V cache read in place ([B, S, H, D]).
launches.clear()
q1 = torch.zeros(b, 1, 8, 128, dtype=torch.bfloat16).transpose(1, 2)
kernel(q1, k, v, q1, torch.empty(b, 1, 8, 128,
                                 dtype=torch.bfloat16).transpose(1, 2))
assert launches and all(p.desc["instructions"] != "wgmma"
                        for _, p in launches)
args = {a.name: a for a in launches[0][1].arguments}
assert args["k"].buffer == k.data_ptr()
# An mma.sync configuration on 9.0, and the backward's kernels.
assert _cuda.CudaKernel(D96, device)._target == MMA90
backward = _cuda_backward.CudaBackwardKernel(D128, device)
assert backward.target == WGMMA
assert backward.kernels["backward-kv"].desc["instructions"] == "wgmma"
# Its dK/dV and dQ kernels read K and V through TMA maps of the
# [B, H, S, D]-contiguous tensors, in place (boxes of 64 keys), the rest
# as buffers.
launches.clear()
lse = torch.zeros(b, 8, s)
grads = [torch.empty_like(x) for x in (qc, kc, kc, qc)]
_cuda_backward.launch(backward.kernels, qc, kc, kc, qc, torch.zeros_like(qc),
                      qc, lse, grads)
planned = {p.desc["layout"]: {a.name: a for a in p.arguments}
           for _, p in launches}
for layout in ("backward-kv", "backward-q"):
    args = planned[layout]
    for name in "kv":
        assert isinstance(args[name], launcher.TensorMap), (layout, name)
        assert args[name].buffer == kc.data_ptr(), (layout, name)
        assert args[name].dims == (128, s, b * 2) and \
            args[name].box == (64, 64, 1), (layout, args[name])
    assert isinstance(args["q"], launcher.Memref), layout
print("PASS the faked 9.0 device's launches")

# 4. warmup(chip="sm_90a") fills the cache with what the device loads.
compiles = recorded("compiling")


def ptx_files(directory):
    """{file name: PTX} of the cache's entries."""
    return {n: open(os.path.join(directory, n)).read()
            for n in os.listdir(directory) if n.endswith(".ptx")}


cfg = cfg_of("dtype=bf16,d=64,dv=64,hq=4,hkv=2,causal=1")
with tempfile.TemporaryDirectory() as tmp:
    gat.set_cache_dir(tmp)
    try:
        meta = dict(dtype=torch.bfloat16, device="meta")
        q, k = torch.empty(1, 4, 32, 64, **meta), torch.empty(1, 2, 32, 64,
                                                                 **meta)
        gat.warmup(q, k, k, q, causal=True, chip="sm_90a", backward=True)
        found = ptx_files(tmp)
        wgmma = {n for n, text in found.items() if "wgmma.mma_async" in text}
        assert any("-" not in n for n in wgmma), found.keys()   # forward
        for layout in ("backward-kv", "backward-q"):
            assert any(n.endswith(f"-{layout}.ptx") for n in wgmma), layout
        # What a 9.0 device then loads is all there.
        compiles.clear()
        _cuda.CudaKernel(cfg, device).prepare(q, k, k, q,
                                              torch.empty_like(q), lse=True)
        _cuda_backward.CudaBackwardKernel(cfg, device)
        assert not compiles, compiles
        # kernel="mma-sync": sm_90's mma.sync kernels besides.
        gat.warmup(q, k, k, q, causal=True, chip="sm_90", backward=True,
                   kernel="mma-sync")
        added = {n: t for n, t in ptx_files(tmp).items() if n not in found}
        assert added and not any("wgmma" in t for t in added.values())
        assert all(".target sm_90\n" in t for t in added.values()), \
            [t[:300] for t in added.values()]
        with env("mma-sync"):
            compiles.clear()
            _cuda.CudaKernel(cfg, device).prepare(q, k, k, q,
                                                  torch.empty_like(q),
                                                  lse=True)
            assert not compiles, compiles
        try:
            gat.warmup(q, k, k, q, device="cuda", kernel="wgmma")
            raise AssertionError("no error")
        except ValueError as e:
            assert "kernel= goes with chip=" in str(e), e
        try:
            gat.warmup(q, k, k, q, chip="sm_75")
            raise AssertionError("no error")
        except ValueError as e:
            assert "chip must be one of" in str(e) and "sm_90a" in str(e), e
    finally:
        gat.set_cache_dir(None)
print("PASS warmup(chip='sm_90a') caches the wgmma kernels")
