"""torch.ops.gated_attention.paged_attention: the serving form of the op
(packed variable-length queries over a paged KV cache; see
gated_attention.paged) for torch tensors.

CPU tensors run the CPU kernel (one compile per heads, head dims, page size
and variant, shared with ga.paged_attention) on the tensors' memory. CUDA
tensors (f16 / bf16) run the paged tensor-core kernel on torch's current
stream (cuda.compile_paged_kernel, disk-cached, one compile per heads, head
dims, page size and variant), reading the block table, lengths and offsets
from device memory. The runtime contract (page ids, lengths, offsets) is
checked before a launch; on CUDA that reads the three small tables back to
the host, so while a CUDA graph is being captured (no host synchronization
allowed) the check is skipped and the contract is the caller's, as in
vLLM's and FlashInfer's kernels. When the tiles alone leave the GPU idle
(decode), the keys are split across CTAs (split-KV) and a merge kernel
combines the parts and applies the gate once; `num_splits` overrides the
choice (1: never split). On the CPU the pipeline's kv-splits=auto splits a
step's keys across threads when its tiles are fewer than them (decided at
run time); `num_splits` there compiles the op once more with kv-splits=N.
"""

import threading
from typing import Optional

import numpy as np
import torch

from .. import compiler, cuda, launcher, paged
from . import _args, _cuda

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _numpy(x):
    """A numpy view of CPU tensor `x` (bf16 as ml_dtypes.bfloat16, which
    the kernel takes as it is)."""
    x = x.detach().contiguous()
    if x.dtype == torch.bfloat16:
        import ml_dtypes
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


OP = "gated_attention.paged_attention"
NAMES = ("q", "key_cache", "value_cache", "block_table", "seq_lens",
         "cu_seqlens_q", "g")


def _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q,
           g, gate, combine):
    """What the op and its fake check before anything else: dense tensors
    (every argument), dtypes, one device, and `gate` / `combine` against
    `g` (the dense op's rule)."""
    for name, x in zip(NAMES, (q, key_cache, value_cache, block_table,
                               seq_lens, cu_seqlens_q, g)):
        if x is not None:
            _args.check_tensor(OP, name, x)
    compiler._gate_kind(g, gate, combine)
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
                    combine: str = "mul",
                    num_splits: Optional[int] = None) -> torch.Tensor:
    _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
           gate, combine)
    num_splits = paged.check_splits(num_splits)
    if q.device.type == "cuda":
        return _paged_cuda(q, key_cache, value_cache, block_table, seq_lens,
                           cu_seqlens_q, g, causal=causal, scale=scale,
                           gate=gate, combine=combine, num_splits=num_splits)
    if q.device.type != "cpu":
        raise NotImplementedError(
            f"gated_attention::paged_attention has no {q.device.type} "
            f"kernel; CPU and CUDA tensors run")
    out = paged.paged_attention(
        _numpy(q), _numpy(key_cache), _numpy(value_cache),
        block_table.numpy(), seq_lens.numpy(), cu_seqlens_q.numpy(),
        None if g is None else _numpy(g), causal=causal, scale=scale,
        gate=gate, combine=combine, dtype=_DTYPES[q.dtype],
        num_splits=num_splits)
    return torch.from_numpy(np.asarray(out, np.float32)).to(q.dtype)


def _shaped(x):
    """A zero-cost numpy stand-in with `x`'s shape (for the shape checks)."""
    return np.broadcast_to(np.zeros((), np.float32), tuple(x.shape))


def _int32(x):
    """`x` as a contiguous int32 tensor on its device (no host round trip)."""
    return x.to(torch.int32).contiguous()


_KERNELS = {}
_LOCK = threading.Lock()


def _paged_cuda(q, key_cache, value_cache, block_table, seq_lens,
                cu_seqlens_q, g, *, causal, scale, gate, combine, num_splits):
    dtype = _DTYPES[q.dtype]
    tables = [_int32(x) for x in (block_table, seq_lens, cu_seqlens_q)]
    # Reading the tables back synchronizes with the host, which a CUDA
    # graph capture forbids: then only the shapes are checked.
    capturing = torch.cuda.is_current_stream_capturing()
    host = [np.zeros(x.shape, np.int32) if capturing else x.cpu().numpy()
            for x in tables]
    paged.check_arguments(
        _shaped(q), _shaped(key_cache), _shaped(value_cache), *host,
        None if g is None else _shaped(g), causal=causal,
        contract=not capturing)
    cfg = paged._config(q, key_cache, value_cache, g, causal=causal,
                        scale=scale, gate=gate, combine=combine, dtype=dtype)
    reason = compiler.tensor_core_unsupported(cfg)
    if reason:
        raise ValueError(f"gated_attention::paged_attention on CUDA runs the "
                         f"paged tensor-core kernel: {reason}")
    page = key_cache.shape[1]
    t, hq = q.shape[:2]
    out = q.new_empty((t, hq, value_cache.shape[3]))
    if t == 0:
        return out
    device = q.device
    key = (cfg, page, device)
    with _LOCK:
        kernels = _KERNELS.get(key)
        if kernels is None:
            compiled = cuda.compile_paged_kernel(
                cfg, page, chip=_cuda.chip_of(device))
            with torch.cuda.device(device):
                backend = cuda.Backend(cuda.Driver(device.index or 0))
                kernels = {layout: backend.kernel(ptx, desc)
                           for layout, (_, ptx, desc) in compiled.items()}
            _KERNELS[key] = kernels
    b, mb = tables[0].shape
    # Split-KV decode when the tiles alone leave the GPU idle: chosen from
    # sizes (no lengths), so a captured graph replays the same launches.
    splits = num_splits or paged.choose_splits(
        kernels["paged-split"].desc, b, t, mb,
        torch.cuda.get_device_properties(device).multi_processor_count)
    operands = {"q": q.contiguous(), "k": key_cache.contiguous(),
                "v": value_cache.contiguous(), "out": out,
                "block_table": tables[0], "seq_lens": tables[1],
                "cu_seqlens_q": tables[2]}
    # A kernel without a gate still takes a (never read) gate buffer.
    operands["gate"] = g.contiguous() if g is not None else out
    # The f32 partials of split-KV, from torch's allocator.
    for name, (_, n) in launcher.partials(kernels, splits, b=b, mb=mb,
                                          t=t).items():
        operands[name] = q.new_empty(n, dtype=torch.float32)
    buffers = {n: (x.data_ptr(), x.numel()) for n, x in operands.items()}
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        launcher.launch_op(kernels, buffers, splits, stream=stream, b=b,
                           mb=mb, t=t)
    return out


@paged_attention.register_fake
def _(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g=None,
      *, causal=False, scale=None, gate="sigmoid", combine="mul",
      num_splits=None):
    _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
           gate, combine)
    return q.new_empty((q.shape[0], q.shape[1], value_cache.shape[3]))


def _backward(ctx, grad):
    raise NotImplementedError(
        "gated_attention::paged_attention has no backward: it is a serving "
        "(inference) kernel")


def _setup_context(ctx, inputs, output, **keyword_only):
    pass


paged_attention.register_autograd(_backward, setup_context=_setup_context)
