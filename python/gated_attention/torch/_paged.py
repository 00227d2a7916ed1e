"""torch.ops.gated_attention.paged_attention: the serving form of the op
(packed variable-length queries over a paged KV cache; see
gated_attention.paged) for torch tensors.

CPU tensors run the CPU kernel (one compile per heads, head dims, page size
and variant, shared with ga.paged_attention) on the tensors' memory; the
runtime contract (page ids, lengths, offsets) is checked before it runs.
CUDA tensors raise NotImplementedError until the paged GPU kernel exists.
"""

from typing import Optional

import numpy as np
import torch

from .. import paged

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _numpy(x):
    """A numpy view of CPU tensor `x` (bf16 as ml_dtypes.bfloat16, which
    the kernel takes as it is)."""
    x = x.detach().contiguous()
    if x.dtype == torch.bfloat16:
        import ml_dtypes
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q,
           g):
    if q.dtype not in _DTYPES:
        raise ValueError(f"gated_attention.paged_attention: q must be "
                         f"float32, float16 or bfloat16, got {q.dtype}")
    for name, x in (("key_cache", key_cache), ("value_cache", value_cache),
                    ("g", g)):
        if x is not None and x.dtype != q.dtype:
            raise ValueError(f"gated_attention.paged_attention: {name} must "
                             f"be {q.dtype} (q's dtype), got {x.dtype}")
    devices = {x.device for x in (q, key_cache, value_cache, block_table,
                                  seq_lens, cu_seqlens_q, g) if x is not None}
    if len(devices) != 1:
        raise ValueError(f"gated_attention.paged_attention: all tensors must "
                         f"be on one device, got {sorted(map(str, devices))}")


@torch.library.custom_op("gated_attention::paged_attention", mutates_args=())
def paged_attention(q: torch.Tensor, key_cache: torch.Tensor,
                    value_cache: torch.Tensor, block_table: torch.Tensor,
                    seq_lens: torch.Tensor, cu_seqlens_q: torch.Tensor,
                    g: Optional[torch.Tensor] = None, *, causal: bool = False,
                    scale: Optional[float] = None, gate: str = "sigmoid",
                    combine: str = "mul") -> torch.Tensor:
    _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g)
    if q.device.type != "cpu":
        raise NotImplementedError(
            f"gated_attention::paged_attention has no {q.device.type} kernel "
            f"yet (the paged GPU kernel is issue 14's next step); CPU tensors "
            f"run")
    out = paged.paged_attention(
        _numpy(q), _numpy(key_cache), _numpy(value_cache),
        block_table.numpy(), seq_lens.numpy(), cu_seqlens_q.numpy(),
        None if g is None else _numpy(g), causal=causal, scale=scale,
        gate=gate, combine=combine, dtype=_DTYPES[q.dtype])
    return torch.from_numpy(np.asarray(out, np.float32)).to(q.dtype)


@paged_attention.register_fake
def _(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g=None,
      *, causal=False, scale=None, gate="sigmoid", combine="mul"):
    _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g)
    return q.new_empty((q.shape[0], q.shape[1], value_cache.shape[3]))


def _backward(ctx, grad):
    raise NotImplementedError(
        "gated_attention::paged_attention has no backward: it is a serving "
        "(inference) kernel")


def _setup_context(ctx, inputs, output, **keyword_only):
    pass


paged_attention.register_autograd(_backward, setup_context=_setup_context)
