"""The torch op's backward: torch.ops.gated_attention.attention_backward
and the autograd formulas of torch.ops.gated_attention.attention and
attention_with_lse.

attention_with_lse (the training path: gated_attention.torch.attention
under autograd) saves (q, k, v, g, out, lse) and the backward reads L;
attention saves (q, k, v, g, out) and the backward recomputes L. Both save
the gated output, never the ungated one (docs/Backward.md). The backward
is an op of its own, so that autograd tracing (torch.compile, opcheck's
aot_dispatch) sees an op with a fake kernel rather than a call into a
library. On the CPU it runs gated_attention.attention_backward compiled by
--gated-attention-to-llvm (the tiled FlashAttention-2-shaped lowering; the
reference one, in f64, for float64) through the disk cache, on the
tensors' memory as the forward's CPU kernel does, reading `lse` when
given. On CUDA it runs the sm_80 backward kernels (_cuda_backward), with
`lse` when given, else computing it.
"""

import ctypes
import threading
from typing import Optional

import torch

from .. import kernel_cache, mlir
from . import _args
from ._cpu import _Descriptor, _descriptor, descriptor_type, \
    innermost_contiguous

# A dtype's empty stand-in for the gate gradient of an op without a gate:
# custom ops return tensors, not None.
_NO_GATE_SHAPE = (0,)

_kernels = {}
_lock = threading.Lock()


class CpuBackwardKernel:
    """The backward of configuration `cfg` (B, Sq, Skv dynamic) for this
    CPU, reading the forward's log-sum-exp with `lse` (else recomputing
    it), loaded from the disk cache or compiled into it by `pipeline` (the
    tiled lowering; tests also build the reference one)."""

    def __init__(self, cfg, pipeline=("--gated-attention-to-llvm",),
                 lse=False):
        text = "module {\n" + mlir.backward_function(
            cfg, "attention_backward", lse=lse) + "}\n"
        what = " with lse" if lse else ""
        self._built = kernel_cache.cpu_library(
            text, f"backward {kernel_cache.variant(cfg)}{what} for the CPU",
            pipeline)
        self._fn = self._built.lib._mlir_ciface_attention_backward
        self._fn.restype = None
        # q, k, v, out, dout[, g][, lse] and a gradient per input.
        n = len(cfg.operands)
        self._fn.argtypes = [ctypes.POINTER(_Descriptor)] * (n + 2) + (
            [ctypes.POINTER(descriptor_type(3))] if lse else []) + [
            ctypes.POINTER(_Descriptor)] * n

    def __call__(self, *tensors):
        """tensors: [B, H, S, D] views of q, k, v, out, dout[, g], the
        [B, Hq, Sq] lse (a kernel built with it) and the gradients dq, dk,
        dv[, dg] (innermost dims contiguous)."""
        descs = [_descriptor(x) for x in tensors]
        self._fn(*[ctypes.byref(d) for d in descs])


def kernel_for(cfg, lse=False):
    """The CPU backward of `cfg`, reading the log-sum-exp with `lse`."""
    key = (_args.compile_key(cfg), lse)
    kernel = _kernels.get(key)
    if kernel is None:
        with _lock:
            kernel = _kernels.get(key)
            if kernel is None:
                kernel = _kernels[key] = CpuBackwardKernel(key[0], lse=lse)
    return kernel


@torch.library.custom_op("gated_attention::attention_backward",
                         mutates_args=())
def attention_backward(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
        dout: torch.Tensor, g: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None, *, causal: bool = False, scale: Optional[float] = None,
        gate: str = "sigmoid", combine: str = "mul",
        layout: str = "bhsd") -> tuple[torch.Tensor, torch.Tensor,
                                       torch.Tensor, torch.Tensor]:
    """Gradients (dq, dk, dv, dg) of attention(q, k, v, g) = out for the
    output gradient `dout`, in the inputs' layout; dg is empty without a
    gate. `lse`: the forward's log-sum-exp [B, Hq, Sq] (float32; float64
    for float64), which the kernels then read (recomputed when None)."""
    cfg = _args.check(q, k, v, g, causal, scale, gate, combine, layout)
    _check_output("out", out, q, v, layout)
    _check_output("dout", dout, q, v, layout)
    if lse is not None:
        _check_lse(lse, q, layout)
    if q.device.type == "cuda":
        return _cuda_gradients(cfg, q, k, v, out, dout, g, lse, layout)
    if q.device.type != "cpu":
        raise NotImplementedError(
            f"gated_attention::attention_backward runs on CPU and CUDA "
            f"tensors, not {q.device.type}")
    # The kernel writes every element of each gradient (rows that see no
    # key get 0), so they need no zero fill: a pass over each saved.
    grads = [torch.empty_like(x) for x in (q, k, v)]
    grads.append(torch.empty_like(g) if g is not None
                 else q.new_empty(_NO_GATE_SHAPE))
    if all(x.numel() == 0 for x in grads):
        return tuple(grads)
    views = [_args.as_bhsd(x, layout) for x in (q, k, v, out, dout)]
    if g is not None:
        views.append(_args.as_bhsd(g, layout))
    inputs = [innermost_contiguous(x) for x in views]
    if lse is not None:
        inputs.append(lse.contiguous())
    outputs = [_args.as_bhsd(x, layout) for x in grads[:3]]
    if g is not None:
        outputs.append(_args.as_bhsd(grads[3], layout))
    kernel_for(cfg, lse=lse is not None)(*inputs, *outputs)
    return tuple(grads)


def _cuda_gradients(cfg, q, k, v, out, dout, g, lse, layout):
    """(dq, dk, dv, dg) of the CUDA kernels (see _cuda_backward)."""
    from . import _cuda_backward
    device = q.device
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    kernel = _cuda_backward.kernel_for(_args.compile_key(cfg), device)
    grads = [torch.empty_like(x) for x in (q, k, v)]
    grads.append(torch.empty_like(g) if g is not None
                 else q.new_empty(_NO_GATE_SHAPE))
    views = [_args.as_bhsd(x, layout) for x in (q, k, v, out, dout)]
    gv = _args.as_bhsd(g, layout) if g is not None else None
    if views[0].shape[2] == 0 or views[1].shape[2] == 0:
        # No query rows or no keys: out is 0, so is every gradient.
        return tuple(x.zero_() for x in grads)
    if lse is None:
        lse = _cuda_backward.log_sum_exp(views[0], views[1], cfg.scale,
                                         cfg.causal)
    outputs = [_args.as_bhsd(x, layout) for x in grads[:3]]
    if g is not None:
        outputs.append(_args.as_bhsd(grads[3], layout))
    kernel(*views, gv, lse, outputs)
    return tuple(grads)


def _check_output(name, x, q, v, layout):
    _args.check_tensor("gated_attention.attention_backward", name, x)
    expected = _args.output_shape(q, v, layout)
    if tuple(x.shape) != tuple(expected) or x.dtype != q.dtype or \
            x.device != q.device:
        raise ValueError(
            f"gated_attention.attention_backward: {name} must be the "
            f"forward's result, {tuple(expected)} {q.dtype} on {q.device}, "
            f"got {tuple(x.shape)} {x.dtype} on {x.device}")


def _check_lse(lse, q, layout):
    _args.check_tensor("gated_attention.attention_backward", "lse", lse)
    expected = tuple(_args.as_bhsd(q, layout).shape[:3])
    dtype = _args.lse_dtype(q.dtype)
    if tuple(lse.shape) != expected or lse.dtype != dtype or \
            lse.device != q.device:
        raise ValueError(
            f"gated_attention.attention_backward: lse must be the forward's "
            f"log-sum-exp, {expected} {dtype} on {q.device}, got "
            f"{tuple(lse.shape)} {lse.dtype} on {lse.device}")


@attention_backward.register_fake
def _(q, k, v, out, dout, g=None, lse=None, *, causal=False, scale=None,
      gate="sigmoid", combine="mul", layout="bhsd"):
    _args.check_symbolic(q, k, v, g, layout)
    dg = torch.empty_like(g) if g is not None else q.new_empty(_NO_GATE_SHAPE)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            dg)


def setup_context(ctx, inputs, output, keyword_only_inputs):
    """Saves what the backward reads: the inputs and the gated output (and
    the keyword arguments: causal, scale, gate, combine, layout)."""
    q, k, v, g = inputs[:4]
    ctx.options = dict(keyword_only_inputs)
    ctx.has_gate = g is not None
    ctx.save_for_backward(q, k, v, g, output)


def setup_context_lse(ctx, inputs, output, keyword_only_inputs):
    """attention_with_lse's: saves (q, k, v, g, out, lse); the log-sum-exp
    is a saved statistic, not differentiated through."""
    q, k, v, g = inputs[:4]
    out, lse = output
    ctx.options = dict(keyword_only_inputs)
    ctx.has_gate = g is not None
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, g, out, lse)


def backward(ctx, grad):
    saved = ctx.saved_tensors
    q, k, v, g, out = saved[:5]
    # The forward's log-sum-exp, where it saved one after the output.
    lse = saved[5] if len(saved) > 5 else None
    dq, dk, dv, dg = torch.ops.gated_attention.attention_backward(
        q, k, v, out, grad, g if ctx.has_gate else None, lse,
        **ctx.options)
    return dq, dk, dv, (dg if ctx.has_gate else None)


def backward_with_lse(ctx, grad, grad_lse):
    """attention_with_lse's: `grad_lse` is None (lse is not
    differentiable)."""
    return backward(ctx, grad)
