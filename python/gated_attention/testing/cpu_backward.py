"""The CPU backward of one case compiled with given pipeline options, for
tests that compare its gradients under several lowerings (matrix units,
register tiles): `gradients` runs gated_attention.attention_backward's
kernel (torch._backward.CpuBackwardKernel) on a case's inputs and returns
dq, dk, dv (and dg) as float64 arrays. Needs torch."""

import numpy as np
import torch

from ..torch import _args, _backward

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def tensor(x, dtype):
    """`x` as a torch tensor of the element type `dtype` (f32, f16, bf16)."""
    return torch.from_numpy(np.ascontiguousarray(x, np.float64)).to(
        TORCH[dtype])


def gradients(cfg, options, x, dout, out, lse):
    """The gradients of `cfg`'s backward compiled with
    --gated-attention-to-llvm=`options`, for inputs `x`, the output's
    gradient `dout`, the forward's output `out` and its log-sum-exp `lse`
    (None: the kernel recomputes it), keyed by operand name."""
    gated = cfg.gate != "none"
    kernel = _backward.CpuBackwardKernel(
        _args.compile_key(cfg), lse=lse is not None,
        pipeline=(f"--gated-attention-to-llvm={options}",))
    names = ("query", "key", "value") + (("gate",) if gated else ())
    ins = [tensor(x[n], cfg.dtype) for n in ("query", "key", "value")]
    ins += [tensor(out, cfg.dtype), tensor(dout, cfg.dtype)]
    if gated:
        ins.append(tensor(x["gate"], cfg.dtype))
    if lse is not None:
        ins.append(torch.from_numpy(np.ascontiguousarray(lse, np.float32)))
    grads = [torch.empty_like(tensor(x[n], cfg.dtype)) for n in names]
    kernel(*ins, *grads)
    return {n: g.double().numpy() for n, g in zip(names, grads)}
