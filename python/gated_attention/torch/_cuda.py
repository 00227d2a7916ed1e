"""The op's CUDA kernel, launched on torch's current stream.

The tensor-core kernel of --gated-attention-to-ptx (f16 / bf16), compiled
once per configuration (cuda.compile_kernel, kept in the disk cache),
loaded into the device's primary context (torch's) and launched through the
driver API on `torch.cuda.current_stream()` with the tensors' pointers. A
call allocates nothing but the output (torch's caching allocator) and never
synchronizes with the host, so it can be captured in a CUDA graph.

The kernel reads [B, H, S, D]-contiguous buffers: q, k, v, g that are not
(a [B, S, H, D] layout, q and gate as strided halves of one projection) are
made contiguous first, one copy each on the stream; the result of a
"bshd" call is a transposed view of the [B, H, S, D] buffer the kernel
writes (calling `.contiguous()` or `.reshape(B, S, H * D)` on it copies).
"""

import torch

from .. import compiler, cuda, kernel_cache

# Compute capabilities -> the chip the kernel is compiled for.
_CHIPS = {(8, 0): "sm_80", (8, 6): "sm_86", (8, 9): "sm_89", (9, 0): "sm_90"}


def chip_of(device):
    capability = torch.cuda.get_device_capability(device)
    chip = _CHIPS.get(tuple(capability))
    if chip is None:
        raise NotImplementedError(
            f"gated_attention: no CUDA kernel for compute capability "
            f"{capability[0]}.{capability[1]} ({torch.cuda.get_device_name(device)});"
            f" it has kernels for {', '.join(_CHIPS.values())}")
    return chip


class CudaKernel:
    def __init__(self, cfg, device):
        reason = compiler.tensor_core_unsupported(cfg)
        if reason:
            raise ValueError(f"gated_attention on CUDA runs the tensor-core "
                             f"kernel: {reason}")
        self.cfg, self.device = cfg, device
        _, ptx, desc = cuda.compile_kernel(cfg, chip=chip_of(device),
                                           cache=kernel_cache.directory() or "")
        with torch.cuda.device(device):
            self._driver = cuda.Driver(device.index or 0)
            self._kernel = cuda.Kernel(self._driver, ptx, desc)

    def __call__(self, q, k, v, g, out):
        """[B, H, S, D] views; `out` [B, H, S, D]-contiguous."""
        q, k, v = (x.contiguous() for x in (q, k, v))
        # A kernel without a gate still takes a (never read) gate buffer.
        g = q if g is None else g.contiguous()
        buffers = {"q": q, "k": k, "v": v, "gate": g, "out": out}
        b, _, sq, _ = q.shape
        with torch.cuda.device(self.device):
            stream = torch.cuda.current_stream(self.device).cuda_stream
            self._kernel.launch(
                {n: (x.data_ptr(), x.numel()) for n, x in buffers.items()},
                b, sq, k.shape[2], stream=stream)
