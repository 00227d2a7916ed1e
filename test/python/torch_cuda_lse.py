# REQUIRES: torch
# RUN: %PYTHON %s
"""The torch op's CUDA forward writing the log-sum-exp without a GPU:
gated_attention.torch._cuda.CudaKernel called with `lse` (f32 [B, Hq, Sq])
on CPU tensors' memory through the emulator backend (the kernels compiled
for the emulator in place of PTX), against the float64 reference within
the error model (accuracy.compare, compare_lse in the kernels' log2
domain): [B, S, H, D] views, GQA, causal with rows that see no key,
Skv = 0, and a decode step whose split-KV merge writes L. Asking for L
leaves the output bitwise unchanged; a wrong lse tensor is a ValueError."""

import contextlib
import threading
import types

import numpy as np
import torch

from gated_attention import accuracy, config
from gated_attention.testing import emulate
from gated_attention.torch import _cuda

TORCH = {"bf16": torch.bfloat16, "f16": torch.float16}


def emulated_kernel(cfg):
    """A CudaKernel of `cfg` whose kernels are compiled for and run on the
    emulator (no driver, no device)."""
    kernel = object.__new__(_cuda.CudaKernel)
    kernel.cfg, kernel.device = cfg, torch.device("cpu")
    kernel._target = kernel._decode_target = ("sm_80", "mma-sync")
    kernel._persistent = False
    kernel._lock, kernel._kernels, kernel._calls = threading.Lock(), {}, {}
    kernel._backend = emulate.HostMemoryEmulator()
    kernel._sm_count = 132
    kernel._desc = kernel._kernel({}).desc
    return kernel


def compile_kernel(cfg, chip, kernel, row_strides=None, lse=False,
                   persistent=False):
    op, desc = emulate.compile_case(cfg, row_strides=row_strides, lse=lse)
    return desc["kernel"], op, desc


def compile_decode_kernels(cfg, chip, kernel, row_strides=None, lse=False):
    return {layout: (desc["kernel"], op, desc) for layout, (op, desc) in
            emulate.compile_decode(cfg, row_strides=row_strides,
                                   lse=lse).items()}


_cuda.cuda = types.SimpleNamespace(compile_kernel=compile_kernel,
                                   compile_decode_kernels=compile_decode_kernels)
torch.cuda.device = lambda device: contextlib.nullcontext()
_cuda.current_stream = lambda device: 0
torch.cuda.current_stream = lambda device: types.SimpleNamespace(
    cuda_stream=0)


def run(cfg, seed, bshd):
    """(out, lse, out without lse, float64 inputs, the CudaKernel) of `cfg`
    through the kernel, q, k, v, the gate and the output [B, S, H, D] when
    `bshd`."""
    x = cfg.inputs(seed)
    dtype = TORCH[cfg.dtype]

    def view(a):
        t = torch.from_numpy(np.ascontiguousarray(a)).to(dtype)
        return t.transpose(1, 2).contiguous().transpose(1, 2) if bshd else t
    q, k, v = (view(x[n]) for n in ("query", "key", "value"))
    g = view(x["gate"]) if cfg.gate != "none" else None
    kernel = emulated_kernel(cfg)
    outs = [view(np.zeros(cfg.shapes()["result"])) for _ in range(2)]
    lse = torch.full((cfg.b, cfg.hq, cfg.sq), float("nan"))
    kernel(q, k, v, g, outs[0], lse)
    kernel(q, k, v, g, outs[1])
    return outs[0], lse, outs[1], x, kernel


for spec, bshd in (
        ("dtype=bf16,d=64,dv=64,hq=4,hkv=2,b=2,sq=40,skv=30,causal=1", True),
        ("dtype=f16,d=64,dv=32,hq=2,hkv=1,sq=17,skv=0,gw=headwise", False),
        # A decode step: 3 splits (2 CTAs a split of 132 SMs' 264 targets,
        # 600 keys), the merge writes L.
        ("dtype=bf16,d=64,dv=64,hq=4,hkv=2,sq=1,skv=600,causal=1", False)):
    cfg = config.parse_cases(spec)[0]
    out, lse, plain, x, kernel = run(cfg, 3, bshd)
    # (The decode step's kernels, split-KV's among them.)
    assert any(key[0] == "decode" for key in kernel._kernels) == \
        (cfg.sq == 1), spec
    assert torch.equal(out, plain), f"{spec}: the output changed with lse"
    got = out.to(torch.float64).numpy()
    result = accuracy.compare(cfg, got, cfg.reference(x), x)
    lse_result = accuracy.compare_lse(cfg, lse.numpy(), x, log2_domain=True)
    assert result.ok and lse_result.ok, (spec, result, lse_result)
    if cfg.skv == 0 or cfg.causal:
        assert np.isinf(lse.numpy()).any() == (cfg.sq > cfg.skv), spec
    print(f"PASS {cfg.describe()} {'bshd' if bshd else 'bhsd'}: "
          f"{accuracy.describe(result)} lse {accuracy.describe(lse_result)}")

# The lse tensor must be what the kernels write: f32 [B, Hq, Sq] contiguous.
cfg = config.parse_cases("dtype=bf16,d=64,dv=64,hq=2,hkv=1,sq=8,skv=8")[0]
kernel = emulated_kernel(cfg)
q = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
kv = torch.zeros(1, 1, 8, 64, dtype=torch.bfloat16)
for bad in (torch.zeros(1, 2, 8, dtype=torch.float16), torch.zeros(1, 2, 7),
            torch.zeros(1, 8, 2).transpose(1, 2)):
    try:
        kernel(q, kv, kv, q, torch.empty_like(q), bad)
        raise AssertionError(f"no error for {bad.dtype} {bad.shape}")
    except ValueError as e:
        assert "lse must be a contiguous float32 tensor of shape [1, 2, 8]" \
            in str(e), e
print("PASS lse argument checks")
