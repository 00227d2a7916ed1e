"""Gated attention as a PyTorch op: ``torch.ops.gated_attention.attention``.

    import torch
    import gated_attention.torch as gat     # registers the op

    y = gat.attention(q, k, v, g, causal=True)                   # [B, H, S, D]
    y = gat.attention(q, k, v, g, causal=True, layout="bshd")    # [B, S, H, D]
    y = torch.ops.gated_attention.attention(q, k, v, g, causal=True)

q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv], g [B, Hg, Sq, Dg]
(Hg in {Hq, 1}, Dg in {Dv, 1}) or None, in "bhsd" (above) or "bshd"
([B, S, H, D]; FlashAttention's) layout; float32, float16 or bfloat16, one
dtype for all, on the CPU or a CUDA GPU (f16 / bf16 there); float64 on the
CPU (computed in f64 by the reference lowering: for gradcheck, not
speed). The scale is an f32 attribute: float64 runs multiply by its f32
rounding. The result has
q's dtype, device and layout: ``SDPA(q, k, v) * act(g)`` (``combine="mul"``)
or ``+ act(g)`` (``"add"``), act one of sigmoid, silu, ns_sigmoid or a
plugin's gate attribute; grouped-query when Hkv < Hq; ``scale`` defaults to
D^-1/2.

``causal=True`` is bottom-right aligned (FlashAttention's rule): query i
sees keys j <= i + Skv - Sq. SDPA's ``is_causal`` is top-left aligned
(j <= i): the two agree when Sq == Skv and differ otherwise (a decode step,
Sq = 1, sees every key here and only the first under ``is_causal``). A row
that sees no key is 0 before the gate.

Memory: on the CPU the kernel reads every input through its strides (a
``[B, S, H, D]`` tensor, q and gate as the two halves of one projection)
and writes the result in place: no copies. On CUDA too (a kernel compiled
once per layout of the rows), except for a tensor whose last dim is
strided, whose rows overlap or are not 16-byte aligned, which is copied
first (see ``gated_attention.torch._cuda``); it launches on torch's current
stream, with
no host synchronization (the wgmma kernel's: once per new address of q,
k or v, for its TMA maps) and no allocation besides the output, so it can
be captured in a CUDA graph.

In eager code that records no autograd, ``attention`` runs the op's kernel
without torch's dispatcher once the op has checked a call of the same
signature (shapes, dtypes, devices, options), and goes through
``torch.ops.gated_attention.attention`` wherever something would see the op
(torch.compile and export, dispatch and function modes, the profiler,
vmap, forward-mode AD, tensor subclasses): ``_op.direct``.
``paged_attention`` does the same on CPU tensors (``_paged.direct``), its
tables' values still checked on every call.

Kernels are compiled once per configuration (head counts, head dims, dtype,
variant; not B or the lengths), logged on the ``gated_attention`` logger,
and kept on disk (:func:`set_cache_dir`, ``GATED_ATTENTION_CACHE_DIR``); a
later process loads them. :func:`warmup` compiles ahead of time.

The dense op has a backward (``torch.ops.gated_attention.attention_backward``,
docs/Backward.md). :func:`attention` under autograd (grad mode on and an
input that requires grad) runs ``torch.ops.gated_attention.attention_with_lse``,
which returns the log-sum-exp [B, Hq, Sq] too: its autograd saves q, k, v,
g, the gated output and L, and the backward reads L. Called directly,
``torch.ops.gated_attention.attention`` saves q, k, v, g and the gated
output, and its backward recomputes L (one more Q Kᵀ). Neither saves the
ungated output. The backward runs on CPU tensors the tiled
FlashAttention-2-shaped lowering (the reference one for float64); on CUDA
tensors the backward kernels (bitwise reproducible run to run), for
f16 / bf16, head dims up to 256 and the sigmoid / NS-sigmoid gates with
``combine="mul"`` (or no gate); other configurations raise
NotImplementedError at ``.backward()``. ``paged_attention`` is
inference-only.

Which CUDA kernels: on compute capability 9.0 (H100, H200) the sm_90a
kernels built on wgmma (the forward, and the backward's dK/dV and dQ)
where the head dims fit them (multiples of 64; the backward 64 or 128, or
128 and 256 above 128, as the compiler decides), the mma.sync kernels
compiled for sm_90 otherwise and for decode steps (Sq = 1); other GPUs
run the mma.sync kernels of their chip. ``GATED_ATTENTION_CUDA_KERNEL``
(``auto``, the default; ``wgmma``; ``mma-sync``: mma.sync everywhere)
overrides it, read when a configuration's kernels are first made, as is
``GATED_ATTENTION_CUDA_PERSISTENT=1`` (off by default: see
docs/Design.md), which makes the wgmma forward persistent. The
wgmma forward reads q, k and v as [B, H, S, D]-contiguous buffers: in
another layout they are copied first. ``paged_attention`` runs the
mma.sync kernels.
"""

import torch

from .. import kernel_cache
from . import _args, _backward, _op, _paged

__all__ = ["attention", "paged_attention", "warmup", "set_cache_dir",
           "cache_dir"]

LAYOUTS = _args.LAYOUTS


def attention(q, k, v, g=None, *, causal=False, scale=None, gate="sigmoid",
              combine="mul", layout="bhsd"):
    """torch.ops.gated_attention.attention (see the module docstring); under
    autograd attention_with_lse, so that the backward reads the forward's
    log-sum-exp instead of recomputing it."""
    # A signature seen before, in eager code without autograd: the op's
    # work without the dispatcher's (_op.direct).
    out = _op.direct(q, k, v, g, causal, scale, gate, combine, layout)
    if out is not None:
        return out
    # Here too: a nested tensor never reaches the op's kernel (torch's
    # dispatcher refuses it first, with its own message).
    tensors = [x for name, x in zip(_args.NAMES, (q, k, v, g))
               if name != "g" or x is not None]
    for name, x in zip(_args.NAMES, tensors):
        _args.check_tensor("gated_attention", name, x)
    kw = dict(causal=causal, scale=scale, gate=gate, combine=combine,
              layout=layout)
    if torch.is_grad_enabled() and any(x.requires_grad for x in tensors):
        out, _ = torch.ops.gated_attention.attention_with_lse(q, k, v, g,
                                                              **kw)
        return out
    return torch.ops.gated_attention.attention(q, k, v, g, **kw)


def paged_attention(q, key_cache, value_cache, block_table, seq_lens,
                    cu_seqlens_q, g=None, *, causal=False, scale=None,
                    gate="sigmoid", combine="mul", num_splits=None):
    """torch.ops.gated_attention.paged_attention: packed variable-length
    queries [T, Hq, D] over a paged KV cache [NB, P, Hkv, D(v)] addressed
    through block_table [B, MB] (int32), with seq_lens [B] and cu_seqlens_q
    [B + 1] (int32); the names and rules of gated_attention.paged. CPU
    tensors, and CUDA tensors (f16 / bf16: the paged kernel, split-KV for
    decode; `num_splits` overrides its choice of splits)."""
    # A CPU signature seen before, in eager code: the op's work without the
    # dispatcher's (_paged.direct).
    out = _paged.direct(q, key_cache, value_cache, block_table, seq_lens,
                        cu_seqlens_q, g, causal, scale, gate, combine,
                        num_splits)
    if out is not None:
        return out
    for name, x in zip(_paged.NAMES, (q, key_cache, value_cache, block_table,
                                      seq_lens, cu_seqlens_q, g)):
        if name != "g" or x is not None:
            _args.check_tensor(_paged.OP, name, x)
    return torch.ops.gated_attention.paged_attention(
        q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
        causal=causal, scale=scale, gate=gate, combine=combine,
        num_splits=num_splits)


def warmup(q, k, v, g=None, *, causal=False, scale=None, gate="sigmoid",
           combine="mul", layout="bhsd", device=None, chip=None,
           backward=None, kernel=None, persistent=None):
    """Compiles (or loads from the disk cache) the kernel that `attention`
    would run for these arguments, without running it. Tensors may be on
    the "meta" device (only shapes, dtypes and strides matter; B and the
    lengths do not): pass `device` ("cpu", "cuda", "cuda:1") for them.

    `backward` (default: when any of q, k, v, g requires grad) compiles the
    training path's kernels instead (the forward that writes the
    log-sum-exp and the backward that reads it), so that the first
    training step compiles nothing; on CUDA (and with `chip`) it raises NotImplementedError for a
    configuration the CUDA backward kernels do not take.

    With `chip` ("sm_80", "sm_86", "sm_89", "sm_90"; "sm_90a" names the
    same GPUs as "sm_90") the CUDA kernels are compiled ahead of time into
    the disk cache (cache_dir(), which must be set) for a GPU of that chip,
    on a machine that need not have one: copy the directory there and set
    GATED_ATTENTION_CACHE_DIR to it. They are the kernels that GPU loads
    under `kernel` ("auto", "wgmma", "mma-sync"; default: what
    GATED_ATTENTION_CUDA_KERNEL chooses there): on sm_90 the wgmma kernels
    (and mma.sync's where they do not fit) unless "mma-sync"; and under
    `persistent` (default: GATED_ATTENTION_CUDA_PERSISTENT there)."""
    cfg = _args.check(q, k, v, g, causal, scale, gate, combine, layout)
    device = torch.device(device) if device is not None else q.device
    if backward is None:
        backward = any(x is not None and x.requires_grad
                       for x in (q, k, v, g))
    elif not isinstance(backward, bool):
        raise ValueError(f"gated_attention.warmup: backward must be True, "
                         f"False or None, not {backward!r}")
    views = [None if x is None else _args.as_bhsd(x, layout)
             for x in (q, k, v, g)]
    out = _args.as_bhsd(_args.new_output(q, v, layout), layout)
    if chip is not None:
        from . import _cuda
        if kernel_cache.directory() is None:
            raise ValueError("gated_attention.warmup(chip=...) compiles into "
                             "the disk cache: set_cache_dir() or "
                             "GATED_ATTENTION_CACHE_DIR first")
        _cuda.ahead_of_time(_args.compile_key(cfg), chip, *views, out,
                            lse=backward, kernel=kernel,
                            persistent=persistent)
        if backward:
            from . import _cuda_backward
            _cuda_backward.ahead_of_time(_args.compile_key(cfg), chip,
                                         kernel)
        return
    if kernel is not None:
        raise ValueError("gated_attention.warmup: kernel= goes with chip= "
                         "(a device's kernels follow "
                         "GATED_ATTENTION_CUDA_KERNEL)")
    if persistent is not None:
        raise ValueError("gated_attention.warmup: persistent= goes with "
                         "chip= (a device's kernels follow "
                         "GATED_ATTENTION_CUDA_PERSISTENT)")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    kernel = _op.kernel_for(cfg, device, lse=backward)
    if device.type == "cuda":
        kernel.prepare(*views, out, lse=backward)
    if backward and device.type == "cuda":
        from . import _cuda_backward
        _cuda_backward.kernel_for(_args.compile_key(cfg), device)
    elif backward:
        _backward.kernel_for(cfg, lse=True)


def set_cache_dir(path):
    """Keeps compiled kernels in `path` (None: no disk cache)."""
    kernel_cache.set_directory(path)


def cache_dir():
    """Where compiled kernels are kept (None: no disk cache)."""
    return kernel_cache.directory()
