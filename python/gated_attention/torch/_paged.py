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

import ctypes
import dataclasses
import threading
from typing import Optional

import numpy as np
import torch

from .. import compiler, cuda, launcher, paged
from . import _args, _cpu, _cuda, _op

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


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
    if q.device.type == "cpu":
        return _paged_cpu(q, key_cache, value_cache, block_table, seq_lens,
                          cu_seqlens_q, g, causal, scale, gate, combine,
                          num_splits)
    _check(q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
           gate, combine)
    num_splits = paged.check_splits(num_splits)
    if q.device.type == "cuda":
        return _paged_cuda(q, key_cache, value_cache, block_table, seq_lens,
                           cu_seqlens_q, g, causal=causal, scale=scale,
                           gate=gate, combine=combine, num_splits=num_splits)
    raise NotImplementedError(
        f"gated_attention::paged_attention has no {q.device.type} "
        f"kernel; CPU and CUDA tensors run")


class _CpuKernel:
    """The paged op's CPU function computing into a buffer
    (paged.cpu_library), called on tensors' memory."""

    def __init__(self, cfg, page, num_splits):
        self._built = paged.cpu_library(cfg, page, num_splits)
        self._fn = self._built.lib._mlir_ciface_paged
        self._fn.restype = None

    def __call__(self, *tensors):
        """Contiguous q, key_cache, value_cache, the int32 tables[, g] and
        the output."""
        descs = [_cpu._descriptor(x) for x in tensors]
        self._fn(*[ctypes.byref(d) for d in descs])


_CPU_KERNELS = {}
# Call signatures -> their kernel (the dense op's _op._calls, for the paged
# op): a call of a known signature skips the argument checks, which read
# only what the key holds, and the configuration; the tables' values (the
# runtime contract) are checked on every call.
_cpu_calls = {}


def _signature(tensors, causal, scale, gate, combine, num_splits):
    return _args.signature((causal, scale, gate, combine, num_splits),
                           tensors)


def _cpu_kernel_of_call(tensors, causal, scale, gate, combine, num_splits):
    """The CPU kernel of a call: on its signature's first call the
    arguments are checked (_check, check_splits, the shapes) and the
    kernel compiled or loaded."""
    key = _signature(tensors, causal, scale, gate, combine, num_splits)
    kernel = _cpu_calls.get(key) if key is not None else None
    if kernel is not None:
        return kernel
    q, kc, vc, table, lens, cu, g = tensors
    _check(q, kc, vc, table, lens, cu, g, gate, combine)
    num_splits = paged.check_splits(num_splits)
    paged.check_cpu_splits(num_splits)
    paged.check_arguments(
        *(_shaped(x) for x in (q, kc, vc)),
        *(_shaped(x, _numpy_type(x.dtype)) for x in (table, lens, cu)),
        None if g is None else _shaped(g), causal=causal, contract=False)
    cfg = dataclasses.replace(
        paged._config(q, kc, vc, g, causal=causal, scale=scale, gate=gate,
                      combine=combine, dtype=_DTYPES[q.dtype]),
        b=1, sq=1, skv=1)
    compiled = (cfg, kc.shape[1], num_splits)
    with _LOCK:   # one compile per configuration, not one per thread
        kernel = _CPU_KERNELS.get(compiled)
        if kernel is None:
            kernel = _CPU_KERNELS[compiled] = _CpuKernel(*compiled)
        if key is not None:
            _args.remember(_cpu_calls, key, kernel)
    return kernel


def _run_cpu(kernel, q, kc, vc, table, lens, cu, g, causal):
    """The op on CPU tensors by `kernel`, into a new output, after the
    runtime contract of the tables' values."""
    tables = [_int32(n, x) for n, x in zip(TABLES, (table, lens, cu))]
    t = q.shape[0]
    paged.check_contract(*(x.numpy() for x in tables), t, kc.shape[0],
                         kc.shape[1], causal)
    out = q.new_empty((t, q.shape[1], vc.shape[3]))
    if t:
        operands = [q, kc, vc, *tables] + ([] if g is None else [g])
        kernel(*(x.contiguous() for x in operands), out)
    return out


def _paged_cpu(q, kc, vc, table, lens, cu, g, causal, scale, gate, combine,
               num_splits):
    tensors = (q, kc, vc, table, lens, cu, g)
    kernel = _cpu_kernel_of_call(tensors, causal, scale, gate, combine,
                                 num_splits)
    return _run_cpu(kernel, q, kc, vc, table, lens, cu, g, causal)


def direct(q, kc, vc, table, lens, cu, g, causal, scale, gate, combine,
           num_splits):
    """The op's result on CPU tensors without torch's dispatcher, or None
    where the call has to go through it (_op.direct's rules: a signature
    seen before, nothing that would observe the op, options of the
    schema's exact types)."""
    tensors = (q, kc, vc, table, lens, cu, g)
    if (not _op.unobserved([x for x in tensors if x is not None])
            or not _args.exact_options(causal, scale, gate, combine)
            or not (num_splits is None or type(num_splits) is int)):
        return None
    key = _signature(tensors, causal, scale, gate, combine, num_splits)
    kernel = _cpu_calls.get(key) if key is not None else None
    if kernel is None:
        return None
    return _run_cpu(kernel, q, kc, vc, table, lens, cu, g, causal)


def _shaped(x, dtype=np.float32):
    """A zero-cost numpy stand-in with `x`'s shape (for the shape checks)."""
    return np.broadcast_to(np.zeros((), dtype), tuple(x.shape))


def _numpy_type(dtype):
    """The numpy type of a torch dtype (float32 for one numpy lacks, such
    as bfloat16): what the tables' checks read, and refuse by name when it
    is not an integer type."""
    try:
        return torch.empty((), dtype=dtype).numpy().dtype
    except TypeError:
        return np.dtype(np.float32)


_INT32 = torch.iinfo(torch.int32)
TABLES = ("block_table", "seq_lens", "cu_seqlens_q")


def _int32(name, x):
    """Integer table `x` as a contiguous int32 tensor on its device; a
    wider table's values must fit (a cast would wrap them into other page
    ids and lengths)."""
    if x.dtype == torch.int32:
        return x.contiguous()
    if x.numel() and (x.min() < _INT32.min or x.max() > _INT32.max):
        raise ValueError(f"{OP}: {name} must fit in int32")
    return x.to(torch.int32).contiguous()


_KERNELS = {}
_LOCK = threading.Lock()


def _paged_cuda(q, key_cache, value_cache, block_table, seq_lens,
                cu_seqlens_q, g, *, causal, scale, gate, combine, num_splits):
    dtype = _DTYPES[q.dtype]
    # Reading the tables back synchronizes with the host, which a CUDA
    # graph capture forbids: then only the shapes (and integer types) are
    # checked.
    capturing = torch.cuda.is_current_stream_capturing()
    originals = (block_table, seq_lens, cu_seqlens_q)
    host = [_shaped(x, _numpy_type(x.dtype)) if capturing else x.cpu().numpy()
            for x in originals]
    paged.check_arguments(
        _shaped(q), _shaped(key_cache), _shaped(value_cache), *host,
        None if g is None else _shaped(g), causal=causal,
        contract=not capturing)
    tables = [x.to(torch.int32).contiguous() for x in originals]
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
