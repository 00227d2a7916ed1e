"""torch.ops.gated_attention.attention: schema, kernels, fake, autograd."""

import threading
from typing import Optional

import torch

from . import _args, _backward
from ._cpu import innermost_contiguous

_kernels = {}
_lock = threading.Lock()


def kernel_for(cfg, device, lse=False):
    """The compiled kernel of `cfg` on `device` (compiled or loaded from the
    disk cache on first use, then kept for the process); on the CPU with
    `lse`, the one that writes the log-sum-exp too (a CUDA kernel writes
    it when a call passes one)."""
    cfg = _args.compile_key(cfg)
    lse = lse and device.type == "cpu"
    key = (cfg, device.type, device.index, lse)
    kernel = _kernels.get(key)
    if kernel is None:
        with _lock:   # one compile per configuration, not one per thread
            kernel = _kernels.get(key)
            if kernel is None:
                if device.type == "cpu":
                    from ._cpu import CpuKernel
                    kernel = CpuKernel(cfg, lse)
                elif device.type == "cuda":
                    from ._cuda import CudaKernel
                    kernel = CudaKernel(cfg, device)
                else:
                    raise NotImplementedError(
                        f"gated_attention: no kernel for {device.type} "
                        f"tensors (cpu and cuda have one)")
                _kernels[key] = kernel
    return kernel


# Call signatures -> their kernel: a call of a known signature skips
# _args.check (what it checks is in the key) and kernel_for. On the CPU
# those two took about 0.1 ms a call (cProfile, 2026-12-06: a B = 1 decode
# step of Qwen3-Next over 4096 keys ran 0.83 ms through the op, 0.70 ms
# calling its kernel), a seventh of a decode step.
_calls = {}


def _signature(q, k, v, g, causal, scale, gate, combine, layout, want_lse):
    """Everything _args.check and kernel_for read of a call
    (_args.signature)."""
    return _args.signature((causal, scale, gate, combine, layout, want_lse),
                           (q, k, v, g))


def _kernel_of_call(q, k, v, g, causal, scale, gate, combine, layout,
                    want_lse):
    """The kernel of a call (checked, and compiled or loaded, on its
    signature's first call), or None for a call with an empty result,
    which runs no kernel."""
    key = _signature(q, k, v, g, causal, scale, gate, combine, layout,
                     want_lse)
    kernel = _calls.get(key) if key is not None else None
    if kernel is not None:
        return kernel
    cfg = _args.check(q, k, v, g, causal, scale, gate, combine, layout)
    if 0 in _args.output_shape(q, v, layout):
        return None
    kernel = kernel_for(cfg, q.device, lse=want_lse)
    if key is not None:
        with _lock:
            _args.remember(_calls, key, kernel)
    return kernel


def _forward(q, k, v, g, causal, scale, gate, combine, layout,
             want_lse=False):
    """Runs the op into a new output and, with `want_lse`, a new
    log-sum-exp [B, Hq, Sq]; returns (out, lse or None)."""
    kernel = _kernel_of_call(q, k, v, g, causal, scale, gate, combine,
                             layout, want_lse)
    return _run(kernel, q, k, v, g, layout, want_lse)


def _run(kernel, q, k, v, g, layout, want_lse):
    """_forward with the call's kernel (None: an empty result, no kernel
    runs)."""
    out = _args.new_output(q, v, layout)
    lse = _args.new_lse(q, layout) if want_lse else None
    if kernel is not None:
        launch = _launch_cuda if q.device.type == "cuda" else _launch_cpu
        launch(kernel, q, k, v, g, layout, out, lse)
    return out, lse


def _launch_cpu(kernel, q, k, v, g, layout, out, lse):
    inputs = [innermost_contiguous(_args.as_bhsd(x, layout))
              for x in (q, k, v, g) if x is not None]
    kernel(*inputs, _args.as_bhsd(out, layout),
           *([] if lse is None else [lse]))


def _launch_cuda(kernel, q, k, v, g, layout, out, lse):
    if layout == "bhsd":
        kernel(q, k, v, g, out, lse=lse)
    else:
        kernel(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
               None if g is None else g.transpose(1, 2), out.transpose(1, 2),
               lse=lse)


def unobserved(tensors):
    """Whether nothing but the kernel would see an op called on `tensors`
    now: no tracing (torch.compile, export, torch.jit.trace), no autograd
    to record, no dispatch or function mode, no functorch transform (vmap,
    grad), no forward-mode AD, no profiler, and only plain tensors (no
    subclass). Where it holds, an op may run its kernel without torch's
    dispatcher (direct here, _paged.direct)."""
    if torch.compiler.is_compiling():   # (first: nothing else is traced)
        return False
    if torch.jit.is_tracing():   # (its graph records ops, not kernels)
        return False
    grad = torch.is_grad_enabled()
    for x in tensors:
        if type(x) is not torch.Tensor or grad and x.requires_grad:
            return False
    return not (torch._C._is_torch_function_mode_enabled()
                or torch._C._len_torch_dispatch_stack()
                or torch._C._functorch.peek_interpreter_stack() is not None
                or torch.autograd.forward_ad._current_level >= 0
                or torch.autograd.profiler._is_profiler_enabled)


def direct(q, k, v, g, causal, scale, gate, combine, layout):
    """The op's result computed without torch's dispatcher, or None where
    the call has to go through it: its signature not seen yet (the op
    checks it), autograd to record, tracing (torch.compile, export,
    torch.jit.trace), a mode, transform or profiler that would see the op
    (dispatch and function modes, vmap and functorch's grad, forward-mode
    AD), a tensor subclass, an option of another type than the schema's
    (the dispatcher converts or refuses it). Between the caller and the
    kernel the dispatcher's layers (autograd's no-grad redispatch,
    custom_op's wrappers and aliasing check) took 60-90 us of a decode
    step on the CPU, run cold after the kernel has streamed K and V
    through the caches (docs/Design.md)."""
    tensors = (q, k, v) if g is None else (q, k, v, g)
    if (not unobserved(tensors) or type(layout) is not str
            or not _args.exact_options(causal, scale, gate, combine)):
        return None
    key = _signature(q, k, v, g, causal, scale, gate, combine, layout, False)
    kernel = _calls.get(key) if key is not None else None
    if kernel is None:
        return None
    return _run(kernel, q, k, v, g, layout, False)[0]


@torch.library.custom_op("gated_attention::attention", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              g: Optional[torch.Tensor] = None, *, causal: bool = False,
              scale: Optional[float] = None, gate: str = "sigmoid",
              combine: str = "mul", layout: str = "bhsd") -> torch.Tensor:
    return _forward(q, k, v, g, causal, scale, gate, combine, layout)[0]


@attention.register_fake
def _(q, k, v, g=None, *, causal=False, scale=None, gate="sigmoid",
      combine="mul", layout="bhsd"):
    _args.check_symbolic(q, k, v, g, layout)
    return _args.new_output(q, v, layout)


@torch.library.custom_op("gated_attention::attention_with_lse",
                         mutates_args=())
def attention_with_lse(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
        g: Optional[torch.Tensor] = None, *, causal: bool = False,
        scale: Optional[float] = None, gate: str = "sigmoid",
        combine: str = "mul",
        layout: str = "bhsd") -> tuple[torch.Tensor, torch.Tensor]:
    """attention(...) and its log-sum-exp [B, Hq, Sq] (float32; float64 for
    float64 inputs; +inf for a row that sees no key): the training path's
    forward, whose autograd saves L for the backward."""
    return _forward(q, k, v, g, causal, scale, gate, combine, layout,
                    want_lse=True)


@attention_with_lse.register_fake
def _(q, k, v, g=None, *, causal=False, scale=None, gate="sigmoid",
      combine="mul", layout="bhsd"):
    _args.check_symbolic(q, k, v, g, layout)
    return _args.new_output(q, v, layout), _args.new_lse(q, layout)


# Both backwards save the gated output, not the ungated one (_backward,
# docs/Backward.md); attention_with_lse's saves its log-sum-exp too, which
# the backward reads instead of recomputing.
attention.register_autograd(_backward.backward,
                            setup_context=_backward.setup_context)
attention_with_lse.register_autograd(
    _backward.backward_with_lse, setup_context=_backward.setup_context_lse)
