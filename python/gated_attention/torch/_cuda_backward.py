"""The op's CUDA backward: the backward kernels on torch's current stream.

convert-gated-attention-to-nvgpu lowers gated_attention.attention_backward
to three kernels (docs/Backward.md): preprocessing (D = rowsum(dOut * out),
dY = dOut * act(G), dG), dK / dV per key block, dQ in a kernel of its own.
They are compiled once per configuration (B, Sq, Skv dynamic) for the
tensors' device through the disk cache, as the forward's kernels are
(cuda.compile_backward_kernels), on the (chip, kernel) that _select picks:
on compute capability 9.0 the sm_90a kernels whose dK/dV and dQ run on
wgmma, where the head dims fit them (GATED_ATTENTION_CUDA_KERNEL=mma-sync
keeps mma.sync), else the mma.sync kernels of the device's chip. dQ has
its own kernel and no atomics: the gradients are bitwise identical run to
run, always (there is no non-deterministic mode to choose).

The kernels read the forward's f32 log-sum-exp L [B, Hq, Sq], which the
forward's kernels write when asked (_cuda.CudaKernel with `lse`); without
a saved one it is computed here (`log_sum_exp`: one Q K^T in f32 by torch,
in blocks of query rows; about half a forward's work). They take [B, H, S, W]-contiguous
buffers: inputs in another layout are copied first, and gradients written
to a contiguous buffer then copied into the caller's layout. Scratch (D,
dY) comes from torch's caching allocator; nothing synchronizes with the
host. Configurations the kernels do not take (f32, head dims above 256,
SiLU or combine = add, whose backward needs the ungated output) raise
NotImplementedError with the compiler's reason.
"""

import math
import threading

import torch

from .. import cuda, launcher
from . import _select
from ._cuda import capability_of, contiguous_aligned, copy_of

_kernels = {}
_lock = threading.Lock()

# The scores of one block of query rows that log_sum_exp holds at once.
_LSE_BLOCK_BYTES = 256 << 20


def unsupported(cfg, error):
    """The NotImplementedError of a configuration without backward
    kernels (`error`: compile_backward_kernels' ValueError)."""
    return NotImplementedError(
        f"gated_attention::attention has no CUDA backward for this "
        f"configuration ({error}); compute attention with torch for it, or "
        f"train on the CPU")


def compile_kernels(cfg, chip, kernel="mma-sync"):
    """{layout: (name, PTX, description)} of the backward of `cfg` on
    `chip` with `kernel` (compile_backward_kernels'), or
    NotImplementedError."""
    try:
        return cuda.compile_backward_kernels(cfg, chip=chip, kernel=kernel)
    except ValueError as e:
        raise unsupported(cfg, e) from None


def ahead_of_time(cfg, chip, kernel=None):
    """Compiles into the disk cache the backward kernels that a device of
    `chip` ("sm_90" and "sm_90a" both name compute capability 9.0) loads
    for `cfg` under `kernel` (_select.choice)."""
    compile_kernels(cfg, *_select.backward(cfg, _select.capability_of(chip),
                                           kernel))


class CudaBackwardKernel:
    """The backward's three kernels of configuration `cfg` loaded on
    `device`."""

    def __init__(self, cfg, device):
        self.cfg, self.device = cfg, device
        self.target = _select.backward(cfg, capability_of(device))
        compiled = compile_kernels(cfg, *self.target)
        with torch.cuda.device(device):
            backend = cuda.Backend(cuda.Driver(device.index or 0))
            self.kernels = {layout: backend.kernel(ptx, desc)
                            for layout, (_, ptx, desc) in compiled.items()}

    def __call__(self, q, k, v, out, dout, g, lse, grads):
        """launch() on torch's current stream of the device."""
        with torch.cuda.device(self.device):
            stream = torch.cuda.current_stream(self.device).cuda_stream
            launch(self.kernels, q, k, v, out, dout, g, lse, grads, stream)


def kernel_for(cfg, device):
    """The CudaBackwardKernel of `cfg` (compile_key'd) on `device`, made
    once per process."""
    key = (cfg, device.index)
    kernel = _kernels.get(key)
    if kernel is None:
        with _lock:
            kernel = _kernels.get(key)
            if kernel is None:
                kernel = _kernels[key] = CudaBackwardKernel(cfg, device)
    return kernel


def _buffer(x):
    """`x` as the kernels read it: contiguous and 16-byte aligned (itself
    where it is)."""
    return x if contiguous_aligned(x) else copy_of(x)


def launch(kernels, q, k, v, out, dout, g, lse, grads, stream=None):
    """Launches the backward's kernels ({layout: launcher.Kernel}) on
    [B, H, S, D] views q, k, v, out, dout, g (None without a gate) and the
    f32 lse [B, Hq, Sq], writing the [B, H, S, D] views `grads` (dq, dk,
    dv[, dg]) on `stream`. Tensors stand for memory by their data_ptr()
    (the backend's addresses). Returns the launcher.Launches."""
    b, _, sq, _ = q.shape
    skv = k.shape[2]
    sizes = {"b": b, "sq": sq, "skv": skv}
    found = launcher.backward_buffers(kernels, **sizes)
    names = ["dq", "dk", "dv"] + (["dg"] if g is not None else [])
    tensors = {"q": q, "k": k, "v": v, "out": out, "dout": dout,
               "lse": lse}
    if g is not None:
        tensors["gate"] = g
    tensors = {n: _buffer(x) for n, x in tensors.items()}
    # Gradients the kernels cannot write in place go through a buffer.
    targets = {n: x if contiguous_aligned(x)
               else torch.empty(x.shape, dtype=x.dtype, device=x.device)
               for n, x in zip(names, grads)}
    tensors.update(targets)
    tensors["delta"] = q.new_empty(found["delta"][1], dtype=torch.float32)
    if g is not None:
        tensors["do"] = torch.empty_like(tensors["dout"])
    launches = launcher.launch_backward(
        kernels, {n: (x.data_ptr(), x.numel()) for n, x in tensors.items()},
        stream, **sizes)
    for n, x in zip(names, grads):
        if targets[n] is not x:
            x.copy_(targets[n])
    return launches


def log_sum_exp(q, k, scale, causal):
    """The forward's L = log sum_j exp(scale q_i . k_j) [B, Hq, Sq] in f32
    (+inf for a row that sees no key, as the forward's lse result) of
    [B, H, S, D] q and k, with the op's bottom-right causal mask and GQA
    (query head h reads K/V head h / (Hq / Hkv)): scores as f32 products
    (float64 where torch is allowed TF32 for f32 matmuls, whose 10-bit
    mantissa the kernels' error model does not take), in blocks of query
    rows."""
    b, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    dtype = torch.float32
    if q.device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32:
        dtype = torch.float64
    group = hq // hkv
    kt = k.to(dtype).transpose(2, 3).unsqueeze(2)   # [B, Hkv, 1, D, Skv]
    lse = torch.empty(b, hq, sq, dtype=torch.float32, device=q.device)
    rows = max(1, _LSE_BLOCK_BYTES // max(1, 8 * b * hq * skv))
    keys = torch.arange(skv, device=q.device)
    for i in range(0, sq, rows):
        n = min(rows, sq - i)
        qi = q[:, :, i:i + n].to(dtype).reshape(b, hkv, group, n, d)
        s = torch.matmul(qi, kt) * scale           # [B, Hkv, R, n, Skv]
        if causal:
            last = torch.arange(i, i + n, device=q.device) + (skv - sq)
            s = s.masked_fill(keys[None, :] > last[:, None], -math.inf)
        lse[:, :, i:i + n] = torch.logsumexp(s, dim=-1).reshape(b, hq, n)
    # (logsumexp gives -inf for a row without keys.)
    return lse.masked_fill_(lse == -math.inf, math.inf)
