# REQUIRES: torch
# RUN: %PYTHON %s | FileCheck %s
# The torch op's CUDA forward with GATED_ATTENTION_CUDA_PERSISTENT=1, on the
# emulator (kernels compiled for it in place of PTX, CPU tensors' memory):
# CudaKernel asks compile_kernel for the persistent kernel and launches it
# on min(tiles, SMs) CTAs; with 2 SMs each CTA computes several of the 6
# tiles. Against the float64 reference within the error model.
import contextlib
import os
import threading
import types

import numpy as np
import torch

from gated_attention import accuracy, config
from gated_attention.testing import emulate
from gated_attention.torch import _cuda

os.environ["GATED_ATTENTION_CUDA_PERSISTENT"] = "1"
asked = []


def compile_kernel(cfg, chip, kernel, row_strides=None, lse=False,
                   persistent=False):
    asked.append(persistent)
    options = f"chip={chip} kernel={kernel}" + (
        " persistent=1" if persistent else "")
    op, desc = emulate.compile_case(cfg, options=options,
                                    row_strides=row_strides, lse=lse)
    return desc["kernel"], op, desc


_cuda.cuda = types.SimpleNamespace(compile_kernel=compile_kernel)
torch.cuda.device = lambda device: contextlib.nullcontext()
_cuda.current_stream = lambda device: 0

cfg = config.parse_cases("dtype=bf16,d=64,dv=64,hq=2,hkv=1,b=1,sq=300,"
                         "skv=300,causal=1")[0]
kernel = object.__new__(_cuda.CudaKernel)
kernel.cfg, kernel.device = cfg, torch.device("cpu")
kernel._target = kernel._decode_target = ("sm_90a", "wgmma")
kernel._persistent = _cuda.looping(kernel._target)
kernel._lock, kernel._kernels, kernel._calls = threading.Lock(), {}, {}
kernel._backend = emulate.HostMemoryEmulator()
kernel._sm_count = 2
kernel._desc = kernel._kernel({}).desc
assert asked == [True] and kernel._desc["persistent"] is True, asked

x = cfg.inputs(0)
q, k, v, g = (torch.from_numpy(np.ascontiguousarray(x[n])).to(torch.bfloat16)
              for n in ("query", "key", "value", "gate"))
out = torch.full(cfg.shapes()["result"], float("nan"), dtype=torch.bfloat16)
grids, emulated = [], kernel._backend.launch
kernel._backend.launch = lambda op, planned, stream=None: (
    grids.append(planned.grid), emulated(op, planned, stream))
kernel(q, k, v, g, out)
assert grids == [(2, 1, 1)], grids   # 6 tiles on 2 CTAs
# (The kernel's description: its approximate exp and sigmoid's bounds.)
result = accuracy.compare(cfg, out.to(torch.float64).numpy(),
                          cfg.reference(x), x, kernel=kernel._desc)
print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} 2 SMs: "
      f"{accuracy.describe(result)}")
# CHECK: PASS {{.*}} 2 SMs
