"""The op's CPU kernel, called on torch tensors' memory in place.

One function per configuration (B, Sq, Skv and every stride are run-time
values), compiled by --gated-attention-to-llvm from
mlir.destination_function: it reads q, k, v, g through their strides and
computes the result in the output tensor, so a call copies nothing. The only
requirement is a contiguous innermost dim (FlashAttention's too); a tensor
without one is copied first (`.contiguous()`: one pass over it).
"""

import ctypes

from .. import kernel_cache, mlir

_MAX_RANK = 4


class _Descriptor(ctypes.Structure):
    """A rank-4 memref descriptor (allocated, aligned, offset, sizes,
    strides), the C interface's argument."""
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64),
                ("sizes", ctypes.c_int64 * _MAX_RANK),
                ("strides", ctypes.c_int64 * _MAX_RANK)]


def innermost_contiguous(x):
    """`x`, or a contiguous copy if its innermost dim is strided."""
    return x if x.shape[-1] == 1 or x.stride(-1) == 1 else x.contiguous()


def _descriptor(x):
    d = _Descriptor()
    d.allocated = d.aligned = x.data_ptr()
    d.offset = 0
    for i, (n, s) in enumerate(zip(x.shape, x.stride())):
        d.sizes[i] = n
        # A dim of size 1 is never stepped over: its stride is free (torch
        # leaves any value there), and the type's static 1 is what it means.
        d.strides[i] = 1 if n == 1 else s
    return d


class CpuKernel:
    """The configuration `cfg`'s function, loaded from the disk cache or
    compiled into it."""

    def __init__(self, cfg):
        text = "module {\n" + mlir.destination_function(cfg, "attention") + \
            "}\n"
        # (Keeps the library, and its directory when not cached, alive.)
        self._built = kernel_cache.cpu_library(
            text, f"{kernel_cache.variant(cfg)} for the CPU")
        self.path = self._built.path
        self._lib = self._built.lib
        self._fn = self._lib._mlir_ciface_attention
        self._fn.restype = None
        self._fn.argtypes = [ctypes.POINTER(_Descriptor)] * (
            len(cfg.operands) + 1)

    def __call__(self, *tensors):
        """tensors: [B, H, S, D] views of q, k, v[, g] and the output (whose
        innermost dims are contiguous)."""
        descs = [_descriptor(x) for x in tensors]
        self._fn(*[ctypes.byref(d) for d in descs])
