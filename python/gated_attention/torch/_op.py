"""torch.ops.gated_attention.attention: schema, kernels, fake, autograd."""

import threading
from typing import Optional

import torch

from . import _args, _backward

_kernels = {}
_lock = threading.Lock()


def kernel_for(cfg, device):
    """The compiled kernel of `cfg` on `device` (compiled or loaded from the
    disk cache on first use, then kept for the process)."""
    cfg = _args.compile_key(cfg)
    key = (cfg, device.type, device.index)
    kernel = _kernels.get(key)
    if kernel is None:
        with _lock:   # one compile per configuration, not one per thread
            kernel = _kernels.get(key)
            if kernel is None:
                if device.type == "cpu":
                    from ._cpu import CpuKernel
                    kernel = CpuKernel(cfg)
                elif device.type == "cuda":
                    from ._cuda import CudaKernel
                    kernel = CudaKernel(cfg, device)
                else:
                    raise NotImplementedError(
                        f"gated_attention: no kernel for {device.type} "
                        f"tensors (cpu and cuda have one)")
                _kernels[key] = kernel
    return kernel


@torch.library.custom_op("gated_attention::attention", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              g: Optional[torch.Tensor] = None, *, causal: bool = False,
              scale: Optional[float] = None, gate: str = "sigmoid",
              combine: str = "mul", layout: str = "bhsd") -> torch.Tensor:
    cfg = _args.check(q, k, v, g, causal, scale, gate, combine, layout)
    out = _args.new_output(q, v, layout)
    if out.numel() == 0:
        return out
    kernel = kernel_for(cfg, q.device)
    views = [None if x is None else _args.as_bhsd(x, layout)
             for x in (q, k, v, g)]
    if q.device.type == "cuda":
        kernel(*views, _args.as_bhsd(out, layout))
    else:
        from ._cpu import innermost_contiguous
        inputs = [innermost_contiguous(x) for x in views if x is not None]
        kernel(*inputs, _args.as_bhsd(out, layout))
    return out


@attention.register_fake
def _(q, k, v, g=None, *, causal=False, scale=None, gate="sigmoid",
      combine="mul", layout="bhsd"):
    _args.check_symbolic(q, k, v, g, layout)
    return _args.new_output(q, v, layout)


# The backward (CPU; CUDA kernels are a later step) saves the gated output,
# not the ungated one: see _backward and docs/Backward.md.
attention.register_autograd(_backward.backward,
                            setup_context=_backward.setup_context)
