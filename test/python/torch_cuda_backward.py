# REQUIRES: torch
# RUN: %PYTHON %s
"""The torch op's CUDA backward without a GPU (the launch on one is the
device check's): the launch sequence of gated_attention.torch._cuda_backward
through a recording fake backend (the three kernels in order, which tensor
each argument is, grids, sizes, the stream; inputs copied only where the
kernels cannot read them), then the same launches on CPU tensors' memory
through the emulator backend, against the float64 gradients within
accuracy_backward's bound for the tensor-core kernels, with L computed by
_cuda_backward.log_sum_exp as the op does when the forward saved none; the
autograd branch (_backward._cuda_gradients) in both layouts; the
NotImplementedError of configurations the kernels do not take; warm-up
compiling the backward kernels ahead of time into the disk cache."""

import dataclasses
import os
import tempfile

import numpy as np
import torch

import gated_attention.torch as gat
from gated_attention import accuracy_backward, config, cuda, launcher
from gated_attention.testing import emulate_backward
from gated_attention.testing.emulate import HostMemoryEmulator
from gated_attention.torch import _args, _backward, _cuda_backward


class Recorder:
    """A backend that records launches; buffers are addresses."""

    def __init__(self):
        self.launches = []

    def load(self, code, desc):
        return desc["layout"]

    def address(self, buffer):
        return buffer

    def launch(self, handle, planned, stream):
        self.launches.append((handle, planned, stream))


TORCH = {"bf16": torch.bfloat16, "f16": torch.float16}
NAMES = {"dq": "query", "dk": "key", "dv": "value", "dg": "gate"}


def tensors(cfg, seed, layout):
    """(inputs as [B, H, S, D] views of tensors in `layout`, out, dout,
    float64 inputs, float64 dout) of a case."""
    x, dout, out, _ = emulate_backward.case_inputs(cfg, seed)
    dtype = TORCH[cfg.dtype]

    def make(a):
        t = torch.from_numpy(np.ascontiguousarray(a)).to(dtype)
        if layout == "bshd":   # [B, S, H, D] storage, seen as [B, H, S, D]
            t = t.transpose(1, 2).contiguous().transpose(1, 2)
        return t
    views = {n: make(x[n]) for n in ("query", "key", "value")}
    if cfg.gate != "none":
        views["gate"] = make(x["gate"])
    return views, make(out), make(dout), x, dout


def check(cfg, grads, x, dout, what):
    got = {NAMES[n]: g.to(torch.float64).numpy() for n, g in grads.items()}
    results = accuracy_backward.compare_backward(cfg, got, x, dout,
                                                 gpu=True)
    worst = " ".join(f"{n}={r.ratio:.3f}" for n, r in results.items())
    assert all(r.ok for r in results.values()), (what, worst)
    print(f"PASS {what}: err/bound {worst}")


# 1. The launch sequence through the recording backend.
cfg = config.parse_cases("dtype=bf16,d=64,dv=32,hq=4,hkv=2,b=2,sq=40,"
                         "skv=70,causal=1,gw=headwise")[0]
compiled = cuda.compile_backward_kernels(cfg, chip="sm_80")
recorder = Recorder()
kernels = {layout: launcher.Kernel(recorder, ptx, desc)
           for layout, (_, ptx, desc) in compiled.items()}
views, out, dout, _, _ = tensors(cfg, 0, "bshd")
q, k, v, g = (views[n] for n in ("query", "key", "value", "gate"))
lse = torch.zeros(2, 4, 40)
grads = [torch.empty_like(t) for t in (q, k, v, g)]           # bshd too
contiguous = [torch.empty(t.shape, dtype=t.dtype) for t in (q, k, v, g)]
launches = _cuda_backward.launch(kernels, q, k, v, out, dout, g, lse,
                                 contiguous, stream=7)
assert [h for h, _, _ in recorder.launches] == list(
    launcher.BACKWARD_LAYOUTS)
assert all(s == 7 for _, _, s in recorder.launches)
by_name = [{a.name: a for a in p.arguments} for p in launches]
pre, kv, dq = by_name
# [B, S, H, D] inputs are copied to [B, H, S, D]; contiguous ones are not.
for name, t in (("q", q), ("k", k), ("out", out), ("dout", dout)):
    assert kv.get(name, pre.get(name)).buffer != t.data_ptr(), name
assert kv["lse"].buffer == lse.data_ptr() == dq["lse"].buffer
assert dq["dq"].buffer == contiguous[0].data_ptr()
assert kv["dk"].buffer == contiguous[1].data_ptr()
assert kv["dv"].buffer == contiguous[2].data_ptr()
assert pre["dg"].buffer == contiguous[3].data_ptr()
# One copy of each input serves every kernel; D and dY pass between them.
for name in ("q", "k", "v", "do", "lse", "delta"):
    assert kv[name].buffer == dq[name].buffer, name
assert pre["do"].buffer == kv["do"].buffer and pre["delta"].buffer == \
    kv["delta"].buffer
assert pre["delta"].elements == 2 * 4 * 40
# The preprocessing: 4 lanes to a row of Dv = 32, 32 rows to a CTA.
assert [p.grid for p in launches] == [(2, 4, 2), (2, 2, 2), (1, 4, 2)], [
    p.grid for p in launches]
for p in launches[1:]:
    assert {a.name: a.value for a in p.arguments
            if isinstance(a, launcher.Scalar)} == {"Sq": 40, "Skv": 70}
# Gradients in another layout go through a contiguous buffer.
recorder.launches.clear()
launches = _cuda_backward.launch(kernels, q, k, v, out, dout, g, lse, grads)
assert launches[2].arguments[[a.name for a in launches[2].arguments]
                             .index("dq")].buffer != grads[0].data_ptr()
# Without a gate dY is dOut, which also stands for the gate and dG.
plain = dataclasses.replace(cfg, gate="none")
ungated = {layout: launcher.Kernel(recorder, ptx, desc) for layout, (
    _, ptx, desc) in cuda.compile_backward_kernels(plain, chip="sm_80").items()}
p = _cuda_backward.launch(ungated, q, k, v, out, dout, None, lse,
                          contiguous[:3])[0]
args = {a.name: a.buffer for a in p.arguments
        if isinstance(a, launcher.Memref)}
assert args["do"] == args["gate"] == args["dg"] == args["dout"]
print("PASS launch sequence (fake backend)")

# 2. The same launches on the emulator, L from log_sum_exp.
for spec, layout in (
        ("dtype=bf16,d=64,dv=32,hq=4,hkv=2,b=2,sq=40,skv=70,causal=1,"
         "gw=headwise", "bshd"),
        ("dtype=f16,d=64,dv=64,hq=2,hkv=1,sq=33,skv=20,causal=1,"
         "gate=ns_sigmoid,gh=shared", "bhsd")):
    case = config.parse_cases(spec)[0]
    emulated = HostMemoryEmulator().kernels(
        emulate_backward.compile_backward(case))
    views, out, dout, x, dout64 = tensors(case, 1, layout)
    qkvg = [views[n] for n in ("query", "key", "value", "gate")]
    lse = _cuda_backward.log_sum_exp(qkvg[0], qkvg[1], case.scale,
                                     case.causal)
    ref = accuracy_backward.log_sum_exp(case, x)
    # Rows that see no key (the second case's first 13): +inf, the
    # forward's convention.
    assert np.array_equal(np.isinf(ref), np.isinf(lse.numpy()))
    assert (lse.numpy()[np.isinf(ref)] == np.inf).all()
    grads = [torch.full_like(t, float("nan")) for t in qkvg]
    _cuda_backward.launch(emulated, *qkvg[:3], out, dout, qkvg[3], lse,
                          grads)
    check(case, dict(zip(NAMES, grads)), x, dout64,
          f"emulated launch {layout} {case.describe()}")

# 3. The autograd branch: the op's gradients in its layout, lse computed,
# through kernel_for (here the emulator's kernels for the case).
case = config.parse_cases("dtype=bf16,d=64,dv=64,hq=4,hkv=4,sq=24,skv=24,"
                          "causal=1")[0]
emulated = HostMemoryEmulator().kernels(
    emulate_backward.compile_backward(case))
kernel_for = _cuda_backward.kernel_for
_cuda_backward.kernel_for = lambda cfg, device: (
    lambda *a: _cuda_backward.launch(emulated, *a))
torch.cuda.current_device = lambda: 0
try:
    for layout in _args.LAYOUTS:
        views, out, dout, x, dout64 = tensors(case, 2, "bhsd")
        args = [_args.as_bhsd(views[n], layout)
                for n in ("query", "key", "value", "gate")]
        full = _args.check(*args, True, None, "sigmoid", "mul", layout)
        got = _backward._cuda_gradients(
            full, *args[:3], _args.as_bhsd(out, layout),
            _args.as_bhsd(dout, layout), args[3], None, layout)
        assert all(t.shape == a.shape and t.stride() == a.stride()
                   for t, a in zip(got, args))
        check(case, {n: _args.as_bhsd(t, layout) for n, t in
                     zip(NAMES, got)}, x, dout64, f"autograd branch {layout}")
    # No keys: every gradient is 0, no launch.
    views, out, dout, _, _ = tensors(
        dataclasses.replace(case, skv=0), 2, "bhsd")
    args = [views[n] for n in ("query", "key", "value", "gate")]
    got = _backward._cuda_gradients(case, *args[:3], out, dout, args[3],
                                    None, "bhsd")
    assert all(not t.any() for t in got)
    try:
        _backward._cuda_gradients(case, *args[:3], out, dout, args[3],
                                  torch.zeros(1, 4, 23), "bhsd")
    except ValueError as e:
        assert "lse must be the forward's log-sum-exp" in str(e), e
finally:
    _cuda_backward.kernel_for = kernel_for
print("PASS autograd branch")

# 4. What the kernels do not take: NotImplementedError with the reason.
for spec, words in (("dtype=bf16,d=40,dv=40", "head dims"),
                    ("dtype=bf16,d=64,dv=64,gate=silu", "ungated output"),
                    ("dtype=f32,d=64,dv=64", "f16 or bf16")):
    try:
        _cuda_backward.compile_kernels(config.parse_cases(spec)[0], "sm_90")
        raise AssertionError(f"no error: {spec}")
    except NotImplementedError as e:
        assert "no CUDA backward" in str(e) and words in str(e), e
print("PASS unsupported configurations: NotImplementedError")

# 5. Warm-up ahead of time compiles the backward's three kernels too.
with tempfile.TemporaryDirectory() as tmp:
    gat.set_cache_dir(tmp)
    try:
        q = torch.empty(1, 8, 4, 64, dtype=torch.bfloat16, device="meta")
        kv = torch.empty(1, 8, 2, 64, dtype=torch.bfloat16, device="meta")
        gat.warmup(q, kv, kv, q, layout="bshd", chip="sm_80",
                   backward=False)
        before = set(os.listdir(tmp))
        gat.warmup(q, kv, kv, q, layout="bshd", chip="sm_80",
                   backward=True)
        added = set(os.listdir(tmp)) - before
        assert sorted(n.split("-", 1)[1] for n in added
                      if n.endswith(".json") and "-" in n) == sorted(
            f"{layout}.json" for layout in launcher.BACKWARD_LAYOUTS), added
        # ... and the training path's forward, the kernels that write the
        # log-sum-exp (the row layouts' kernels of backward=False did not).
        forward = [n for n in added if n.endswith(".json") and "-" not in n]
        assert forward and all(
            "lse" in open(os.path.join(tmp, n)).read() for n in forward), \
            added
        try:
            gat.warmup(q, kv, kv, q, layout="bshd", chip="sm_90",
                       gate="silu", backward=True)
            raise AssertionError("no error")
        except NotImplementedError as e:
            assert "ungated output" in str(e), e
    finally:
        gat.set_cache_dir(None)
print("PASS warm-up compiles the CUDA backward kernels")
