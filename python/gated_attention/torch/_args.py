"""The torch op's arguments: checks, the configuration they make, views.

The op takes tensors in one of two layouts: "bhsd" ([B, H, S, D], SDPA's)
or "bshd" ([B, S, H, D], FlashAttention's, what model code has right after
the projections). Kernels see [B, H, S, D] views of either (a transpose is
a view: no copy); wrong-layout shapes are errors, never transposed.
"""

import dataclasses

import torch

from .. import compiler

LAYOUTS = ("bhsd", "bshd")
DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
          torch.float64: "f64"}
NAMES = ("q", "k", "v", "g")


def as_bhsd(x, layout):
    """[B, H, S, D] view of a tensor in `layout`."""
    return x if layout == "bhsd" else x.transpose(1, 2)


# What to do with a tensor of a kind the kernels do not read.
_DENSE_HINT = {"sparse": ".to_dense()", "mkldnn": ".to_dense()",
               "quantized": ".dequantize()",
               "nested": ".unbind() (one call per sequence; "
                         "paged_attention takes variable lengths)"}


def check_tensor(op, name, x):
    """Raises TypeError unless `x` is a tensor, and ValueError naming it
    unless it is a dense one (layout torch.strided, on any device, "meta"
    too): the kernels read strided memory, so sparse (COO, CSR, CSC, BSR,
    BSC), mkldnn, nested and quantized tensors are refused up front, by
    every op, for every tensor argument. `op` prefixes the message."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a tensor, not "
                        f"{type(x).__name__}")
    if x.is_nested:
        kind, what = "nested", "a nested tensor"
    elif x.layout == torch._mkldnn:
        kind, what = "mkldnn", "an mkldnn tensor"
    elif x.layout != torch.strided:
        kind, what = "sparse", f"a {x.layout} tensor"
    elif x.is_quantized:
        kind, what = "quantized", f"a quantized tensor ({x.dtype})"
    else:
        return x
    raise ValueError(f"{op}: {name} is {what}; the op takes dense "
                     f"(torch.strided) tensors: pass {name}"
                     f"{_DENSE_HINT[kind]}")


def check(q, k, v, g, causal, scale, gate, combine, layout):
    """The AttentionConfig of the op's arguments (B, Sq, Skv dynamic), or a
    ValueError (TypeError for non-tensors) naming what is wrong."""
    compiler.config_mod.check_choice("layout", layout, LAYOUTS)
    tensors = [(n, x) for n, x in zip(NAMES, (q, k, v, g)) if x is not None]
    for name, x in tensors:
        check_tensor("gated_attention", name, x)
    for name, x in tensors:
        if x.dtype not in DTYPES:
            raise ValueError(f"gated_attention: {name} is {x.dtype}; the op "
                             f"takes float32, float16, bfloat16 or float64 "
                             f"(CPU)")
    dtype, device = q.dtype, q.device
    if dtype == torch.float64 and device.type == "cuda":
        raise ValueError(f"gated_attention: float64 tensors run on the CPU "
                         f"only (the GPU kernels compute in f32), got q on "
                         f"{device}")
    for name, x in tensors[1:]:
        if x.dtype != dtype:
            raise ValueError(f"gated_attention: {name} is {x.dtype} but q is "
                             f"{dtype}: all tensors must have one dtype")
        if x.device != device:
            raise ValueError(f"gated_attention: {name} is on {x.device} but "
                             f"q is on {device}")
    for name, x in tensors:
        if x.dim() != 4:
            raise ValueError(f"gated_attention: {name} must be 4-D "
                             f"{_axes(layout)} (layout={layout!r}), got "
                             f"shape {tuple(x.shape)}")
    shapes = [tuple(as_bhsd(x, layout).shape) if x is not None else None
              for x in (q, k, v, g)]
    try:
        cfg = compiler.config_for_shapes(
            *shapes, causal=causal, gate=gate, combine=combine, scale=scale,
            dtype=DTYPES[dtype])
    except ValueError as e:
        given = ", ".join(f"{n} {tuple(x.shape)}" for n, x in tensors)
        raise ValueError(f"gated_attention (layout={layout!r}, tensors "
                         f"{_axes(layout)}; got {given}): {e}") from None
    return cfg


def check_symbolic(q, k, v, g, layout):
    """What the fake kernel checks (sizes may be symbolic there): layout,
    tensor kinds, ranks, dtypes, devices. The real kernel checks the
    rest."""
    compiler.config_mod.check_choice("layout", layout, LAYOUTS)
    tensors = [(n, x) for n, x in zip(NAMES, (q, k, v, g)) if x is not None]
    for name, x in tensors:
        check_tensor("gated_attention", name, x)
        torch._check(x.dim() == 4, lambda: (
            f"gated_attention: {name} must be 4-D {_axes(layout)}"))
        torch._check(x.dtype == q.dtype and x.device == q.device, lambda: (
            f"gated_attention: {name} must have q's dtype and device"))


def _axes(layout):
    return "[B, H, S, D]" if layout == "bhsd" else "[B, S, H, D]"


def compile_key(cfg):
    """`cfg` with B, Sq, Skv dynamic (`?` in the IR, run-time values of the
    kernel): what a compiled kernel depends on."""
    return dataclasses.replace(cfg, b=1, sq=1, skv=1,
                               dynamic=("b", "sq", "skv"))


def output_shape(q, v, layout):
    """The result's shape in `layout`: q's with v's head dim."""
    return (*q.shape[:3], v.shape[3])


def new_output(q, v, layout):
    """The result tensor in `layout`, contiguous in it (the kernels write
    through its strides)."""
    return q.new_empty(output_shape(q, v, layout))


def lse_dtype(dtype):
    """The log-sum-exp's dtype for inputs of `dtype`: the accumulator
    type, float32 (float64 for float64)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def new_lse(q, layout):
    """The log-sum-exp tensor [B, Hq, Sq] of the op on `q` (whatever the
    layout; FlashAttention's softmax_lse has this shape too), contiguous,
    in lse_dtype."""
    b, hq, sq = as_bhsd(q, layout).shape[:3]
    return q.new_empty((b, hq, sq), dtype=lse_dtype(q.dtype))


def signature(options, tensors):
    """A call's signature: its options and each tensor's shape, dtype,
    device and layout (None for an absent optional tensor); None when a
    tensor is nested (its shape may not exist: the op's checks name it).
    What an op's checks read of a call, so a signature seen before needs
    none of them again."""
    key = list(options)
    for x in tensors:
        if x is None:
            key.append(None)
        elif x.is_nested:
            return None
        else:
            key += [x.shape, x.dtype, x.device, x.layout]
    return tuple(key)


def remember(calls, key, value, limit=1024):
    """calls[key] = value, the oldest entry dropped first when `calls`
    holds `limit` (callers hold their lock)."""
    if len(calls) >= limit:
        calls.pop(next(iter(calls)))
    calls[key] = value


def exact_options(causal, scale, gate, combine):
    """Whether the options shared by the ops have the schema's exact types
    (bool; float or None; str; str): where one does not, the dispatcher
    converts or refuses it, so the call must go through it."""
    return (type(causal) is bool and type(gate) is str
            and type(combine) is str
            and (scale is None or type(scale) is float))
